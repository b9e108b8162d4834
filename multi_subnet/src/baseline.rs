//! Baselines in the style of canbench: save a sweep's deterministic figures,
//! and later compare a sweep with them, figure by figure, in percent.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use crate::engines::EngineKind;
use crate::report::Metering;
use crate::sweep::Row;

#[derive(Debug, Serialize, Deserialize)]
pub struct Baseline {
    pub engine: EngineKind,
    pub metering: Metering,
    pub runs: Vec<Row>,
}

impl Baseline {
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self).expect("a baseline serialises");
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write the baseline {}", path.display()))
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the baseline {}", path.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a baseline saved by sweep", path.display()))?;
        if json.get("engine").is_some() && json.get("metering").is_none() {
            anyhow::bail!(
                "{} counts instructions as the wasm engine did before they were replica-counted: \
                 save it again with sweep --save-baseline",
                path.display()
            );
        }
        serde_json::from_value(json)
            .with_context(|| format!("{} is not a baseline saved by sweep", path.display()))
    }
}

/// The deterministic figures of a row, by name. Wall times are not among
/// them: they are shown, never gated.
fn figures(row: &Row) -> BTreeMap<String, f64> {
    let mut figures = BTreeMap::from([
        ("succeeded".to_string(), row.succeeded as f64),
        ("rounds".to_string(), row.rounds as f64),
        ("caller_instructions".to_string(), row.caller_instructions as f64),
        ("cycles".to_string(), row.cycles as f64),
        ("peak_in_flight".to_string(), row.peak_in_flight as f64),
        ("peak_pings_per_round".to_string(), row.peak_pings_per_round as f64),
    ]);
    for (kind, count) in &row.failures {
        figures.insert(format!("failures.{kind:?}"), *count as f64);
    }
    figures
}

/// One figure that moved.
#[derive(Debug, PartialEq)]
pub struct Change {
    pub row: String,
    pub figure: String,
    pub before: f64,
    pub after: f64,
    /// `None` when it was zero before.
    pub percent: Option<f64>,
}

impl Change {
    pub fn beyond(&self, threshold_percent: f64) -> bool {
        self.percent.is_none_or(|p| p.abs() > threshold_percent)
    }
}

/// How a sweep differs from a baseline.
#[derive(Debug, Default)]
pub struct Comparison {
    pub changes: Vec<Change>,
    /// Rows in only one of the two.
    pub unmatched: Vec<String>,
}

impl Comparison {
    pub fn between(baseline: &Baseline, runs: &[Row]) -> Self {
        let before: BTreeMap<String, &Row> = baseline.runs.iter().map(|r| (r.key(), r)).collect();
        let after: BTreeMap<String, &Row> = runs.iter().map(|r| (r.key(), r)).collect();
        let mut comparison = Comparison::default();
        for (key, row) in &after {
            let Some(old) = before.get(key) else {
                comparison.unmatched.push(format!("new: {key}"));
                continue;
            };
            let (old, new) = (figures(old), figures(row));
            let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
            for name in names {
                let (b, a) = (old.get(name).copied().unwrap_or(0.0), new.get(name).copied().unwrap_or(0.0));
                if a != b {
                    let percent = (b != 0.0).then(|| (a - b) / b * 100.0);
                    comparison.changes.push(Change {
                        row: key.clone(),
                        figure: name.clone(),
                        before: b,
                        after: a,
                        percent,
                    });
                }
            }
        }
        comparison
            .unmatched
            .extend(before.keys().filter(|k| !after.contains_key(*k)).map(|k| format!("gone: {k}")));
        comparison
    }

    /// One line per change, marked where it is beyond the threshold.
    pub fn render(&self, threshold_percent: f64) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let pct = c.percent.map_or("new".to_string(), |p| format!("{p:+.2}%"));
            let mark = if c.beyond(threshold_percent) { "  <-- beyond the noise threshold" } else { "" };
            out += &format!("{}: {} {} -> {} ({pct}){mark}\n", c.row, c.figure, c.before, c.after);
        }
        for u in &self.unmatched {
            out += &format!("{u}\n");
        }
        if out.is_empty() {
            out = "every deterministic figure equals the baseline\n".into();
        }
        out
    }

    pub fn regressed(&self, threshold_percent: f64) -> bool {
        !self.unmatched.is_empty() || self.changes.iter().any(|c| c.beyond(threshold_percent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Topology;
    use interface::{Strategy, Wait};

    fn row(rounds: u64) -> Row {
        Row {
            strategy: Strategy::Parallel,
            topology: Topology::CrossSubnet,
            calls: 100,
            succeeded: 100,
            rounds,
            wall_ms: 1.0,
            k: None,
            wait: Wait::Bounded,
            retry: false,
            callees: 1,
            load: crate::load::Load::default(),
            caller_instructions: 1000,
            instructions_per_ping: 10.0,
            peak_pings_per_round: 100,
            cycles: 5,
            failures: BTreeMap::new(),
            peak_in_flight: 100,
            time_step: 1,
            wall_ms_p95: 1.0,
        }
    }

    #[test]
    fn equal_figures_pass_whatever_the_wall_times() {
        let baseline = Baseline { engine: EngineKind::Sim, metering: Metering::Replica, runs: vec![row(2)] };
        let mut now = row(2);
        now.wall_ms = 99.0;
        let c = Comparison::between(&baseline, &[now]);
        assert!(c.changes.is_empty() && !c.regressed(0.0));
    }

    #[test]
    fn a_change_beyond_the_threshold_is_a_regression() {
        let baseline =
            Baseline { engine: EngineKind::Sim, metering: Metering::Replica, runs: vec![row(100)] };
        let c = Comparison::between(&baseline, &[row(103)]);
        assert_eq!(c.changes[0].percent, Some(3.0));
        assert!(c.regressed(2.0));
        assert!(!c.regressed(5.0));
        assert!(c.render(2.0).contains("rounds 100 -> 103 (+3.00%)"));
    }

    #[test]
    fn rows_missing_on_either_side_are_reported() {
        let baseline = Baseline { engine: EngineKind::Sim, metering: Metering::Replica, runs: vec![row(2)] };
        let mut other = row(2);
        other.calls = 7;
        let c = Comparison::between(&baseline, &[other]);
        assert_eq!(c.unmatched.len(), 2);
        assert!(c.regressed(100.0));
    }

    #[test]
    fn a_baseline_saved_before_replica_metering_is_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        std::fs::write(&path, r#"{"engine": "sim", "runs": []}"#).unwrap();
        let error = Baseline::load(&path).unwrap_err().to_string();
        assert!(error.contains("save it again with sweep --save-baseline"), "{error}");
    }
}
