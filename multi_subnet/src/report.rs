//! What a run prints: the example's text lines, or one JSON object.

use serde::Serialize;

use crate::engines::EngineKind;
use crate::scenario::Run;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Every figure with the engine that produced it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub engine: EngineKind,
    #[serde(skip)]
    pub engine_description: String,
    pub runs: Vec<Run>,
}

impl Report {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Json => serde_json::to_string_pretty(self).expect("a report serialises") + "\n",
        }
    }

    /// The example's lines, after one naming the engine.
    fn text(&self) -> String {
        let mut out = format!("Engine: {}\n", self.engine_description);
        for run in &self.runs {
            out += &format!(
                "{} calls: {}/{} successful calls in {:?} ({} rounds)\n",
                run.strategy.label(),
                run.succeeded,
                run.calls,
                run.wall,
                run.rounds.0
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::RoundsToComplete;
    use crate::scenario::{Strategy, Topology};
    use std::time::Duration;

    fn report() -> Report {
        let run = |strategy, succeeded, rounds| Run {
            strategy,
            topology: Topology::CrossSubnet,
            calls: 90,
            succeeded,
            rounds: RoundsToComplete(rounds),
            wall: Duration::from_millis(1500),
        };
        Report {
            engine: EngineKind::PocketIc,
            engine_description: "PocketIC server 16.1.0 (/bin/pocket-ic)".into(),
            runs: vec![run(Strategy::Sequential, 90, 91), run(Strategy::Parallel, 89, 2)],
        }
    }

    #[test]
    fn text_names_the_engine_first_then_the_example_lines() {
        let text = report().render(Format::Text);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "Engine: PocketIC server 16.1.0 (/bin/pocket-ic)",
                "Sequential calls: 90/90 successful calls in 1.5s (91 rounds)",
                "Parallel calls: 89/90 successful calls in 1.5s (2 rounds)",
            ]
        );
    }

    #[test]
    fn json_has_the_documented_shape() {
        let json: serde_json::Value = serde_json::from_str(&report().render(Format::Json)).unwrap();
        assert_eq!(json["engine"], "pocket-ic");
        let run = &json["runs"][1];
        assert_eq!(run["strategy"], "parallel");
        assert_eq!(run["topology"], "cross-subnet");
        assert_eq!(run["calls"], 90);
        assert_eq!(run["succeeded"], 89);
        assert_eq!(run["rounds"], 2);
        assert_eq!(run["wall_ms"], 1500.0);
        assert_eq!(json.as_object().unwrap().len(), 2, "only engine and runs");
    }
}
