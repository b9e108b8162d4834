//! What a run prints: the example's text lines, or one JSON object.

use serde::{Deserialize, Serialize};

use interface::FailureKind;

use crate::engines::EngineKind;
use crate::profile::{MAINNET_ROUND_SECONDS, MAINNET_XNET_LATENCY_ROUNDS};
use crate::scenario::{Run, Topology};
use crate::sweep::Row;
use crate::table::Table;

/// Formats of the example's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExampleFormat {
    Text,
    Json,
}

/// Formats of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Csv,
    Markdown,
}

/// How a report's instruction figures were counted. Both engines count as
/// the replica does: PocketIC runs the replica's execution environment, and
/// the simulator instruments each module with the replica's costs
/// (`sim/src/metering`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metering {
    #[default]
    Replica,
}

/// `compare`'s report: each comparison's runs and what they show, then the
/// example's 90 cross-subnet calls as mainnet would take them.
pub struct CompareReport {
    /// Each comparison's title and runs, the example's 90 cross-subnet
    /// calls last.
    pub sections: Vec<(&'static str, ExampleReport)>,
    pub mainnet: MainnetEstimate,
}

/// The example's 90 cross-subnet calls under the mainnet profile.
pub struct MainnetEstimate {
    pub sequential: Run,
    pub parallel: Run,
}

impl CompareReport {
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        if let Some((_, first)) = self.sections.first() {
            let _ = writeln!(out, "Engine: {}", first.engine_description);
        }
        for (title, report) in &self.sections {
            let _ = writeln!(out, "\n{title}:");
            out += report.render(ExampleFormat::Text).split_once('\n').map_or("", |(_, lines)| lines);
            for pair in report.runs.chunks(2) {
                let [sequential, parallel] = pair else { continue };
                let _ = writeln!(
                    out,
                    "  n = {}: parallel took {} rounds to sequential's {} ({:.1}x fewer) and {:.1}x less wall time; {} of {} parallel calls succeeded",
                    parallel.calls,
                    parallel.rounds.0,
                    sequential.rounds.0,
                    sequential.rounds.0 as f64 / parallel.rounds.0.max(1) as f64,
                    sequential.wall.as_secs_f64() / parallel.wall.as_secs_f64(),
                    parallel.succeeded,
                    parallel.calls,
                );
            }
        }
        // The last comparison's: the example's 90 cross-subnet calls.
        let pocket_ic_rounds: Vec<u64> = self
            .sections
            .last()
            .map(|(_, report)| report.runs.iter().map(|r| r.rounds.0).collect())
            .unwrap_or_default();
        let (sequential, parallel) = (&self.mainnet.sequential, &self.mainnet.parallel);
        let seconds = |run: &Run| run.mainnet_seconds.unwrap_or_default();
        let _ = writeln!(
            out,
            "\nThe same 90 calls as mainnet would take them (simulator; {MAINNET_XNET_LATENCY_ROUNDS} rounds per cross-subnet hop, {MAINNET_ROUND_SECONDS} s rounds):"
        );
        let _ = writeln!(
            out,
            "  sequential: {} rounds, about {:.0} s (PocketIC: {} rounds)",
            sequential.rounds.0,
            seconds(sequential),
            pocket_ic_rounds[0]
        );
        let _ = writeln!(
            out,
            "  parallel: {} rounds, about {:.0} s (PocketIC: {} rounds)",
            parallel.rounds.0,
            seconds(parallel),
            pocket_ic_rounds[1]
        );
        let _ = writeln!(
            out,
            "  parallel is {:.1}x faster on mainnet ({:.1}x in PocketIC rounds); {} and {} of 90 succeeded",
            seconds(sequential) / seconds(parallel).max(f64::MIN_POSITIVE),
            pocket_ic_rounds[0] as f64 / pocket_ic_rounds[1].max(1) as f64,
            sequential.succeeded,
            parallel.succeeded,
        );
        out
    }
}

/// The example's runs with the engine that produced them.
#[derive(Debug, Serialize)]
pub struct ExampleReport {
    pub engine: EngineKind,
    pub metering: Metering,
    #[serde(skip)]
    pub engine_description: String,
    pub runs: Vec<Run>,
}

impl ExampleReport {
    pub fn render(&self, format: ExampleFormat) -> String {
        match format {
            ExampleFormat::Text => self.text(),
            ExampleFormat::Json => serde_json::to_string_pretty(self).expect("a report serialises") + "\n",
        }
    }

    /// The example's lines, after one naming the engine.
    fn text(&self) -> String {
        let mut out = format!("Engine: {}\n", self.engine_description);
        for run in &self.runs {
            let mainnet =
                run.mainnet_seconds.map_or(String::new(), |s| format!(", about {s:.0} s on mainnet"));
            out += &format!(
                "{} calls: {}/{} successful calls in {:?} ({} rounds{mainnet})\n",
                sentence_case(run.strategy.name()),
                run.succeeded,
                run.calls,
                run.wall,
                run.rounds.0
            );
        }
        out
    }
}

/// "sequential" as the example prints it: "Sequential".
fn sentence_case(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map_or(String::new(), |first| first.to_uppercase().chain(chars).collect())
}

/// A sweep's rows with the engine that produced them.
#[derive(Debug, Serialize)]
pub struct SweepReport {
    pub engine: EngineKind,
    pub metering: Metering,
    #[serde(skip)]
    pub engine_description: String,
    pub runs: Vec<Row>,
}

/// The deterministic columns, as (heading, value) per row; with `load`,
/// also how many plans ran at once ([`crate::load`]).
fn deterministic_columns(row: &Row, load: bool) -> Vec<(&'static str, String)> {
    let mut columns = vec![
        ("strategy", row.strategy.name().to_string()),
        ("k", row.k.map_or("-".into(), |k| k.to_string())),
        ("n", row.calls.to_string()),
    ];
    if load {
        let l = row.load;
        columns.push((
            "plans x callers (subnets)",
            format!("{} x {} ({})", l.plans, l.callers, l.caller_subnets),
        ));
    }
    columns.extend([
        ("succeeded", row.succeeded.to_string()),
        ("rounds", row.rounds.to_string()),
        ("peak pings / round", row.peak_pings_per_round.to_string()),
        ("peak in flight", row.peak_in_flight.to_string()),
        ("caller instructions / ping (replica-counted)", format!("{:.0}", row.instructions_per_ping)),
        ("cycles", format_cycles(row.cycles)),
        ("failures", failures_text(row)),
    ]);
    columns
}

/// Whether any of `rows` ran more than one plan at once.
fn shows_load(rows: &[&Row]) -> bool {
    rows.iter().any(|r| r.load != crate::load::Load::default())
}

fn format_cycles(cycles: u64) -> String {
    match cycles {
        c if c >= 1_000_000_000 => format!("{:.2} B", c as f64 / 1e9),
        c if c >= 1_000_000 => format!("{:.1} M", c as f64 / 1e6),
        c => c.to_string(),
    }
}

fn failures_text(row: &Row) -> String {
    if row.failures.is_empty() {
        return "-".into();
    }
    row.failures.iter().map(|(kind, n)| format!("{n} {kind:?}")).collect::<Vec<_>>().join(", ")
}

/// One line per kind of failure shown, saying what it means.
pub fn failure_notes(shown: impl IntoIterator<Item = FailureKind>) -> String {
    let shown: std::collections::BTreeSet<FailureKind> = shown.into_iter().collect();
    shown.iter().map(|kind| format!("- {kind:?}: {}.\n", kind.meaning())).collect()
}

impl SweepReport {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Json => serde_json::to_string_pretty(self).expect("a report serialises") + "\n",
            Format::Csv => self.csv(),
            Format::Markdown => self.markdown(),
        }
    }

    fn topologies(&self) -> Vec<Topology> {
        let mut topologies: Vec<Topology> = self.runs.iter().map(|r| r.topology).collect();
        topologies.dedup();
        topologies
    }

    fn text(&self) -> String {
        let mut out = format!("Engine: {}\n", self.engine_description);
        for topology in self.topologies() {
            let rows: Vec<&Row> = self.runs.iter().filter(|r| r.topology == topology).collect();
            let load = shows_load(&rows);
            let mut header: Vec<&str> = deterministic_columns(rows[0], load).iter().map(|c| c.0).collect();
            header.extend(["wall ms (median)", "wall ms (p95)"]);
            let mut table = Table::new(header);
            for row in rows {
                let mut cells: Vec<String> =
                    deterministic_columns(row, load).into_iter().map(|c| c.1).collect();
                cells.extend([format!("{:.1}", row.wall_ms), format!("{:.1}", row.wall_ms_p95)]);
                table.push(cells);
            }
            out += &format!(
                "\n{} (time step {} ns per round)\n{}\n",
                topology.name(),
                self.runs[0].time_step,
                table.text()
            );
        }
        out + &self.failure_notes()
    }

    /// What the failures in the tables mean, if there are any.
    fn failure_notes(&self) -> String {
        let notes = failure_notes(self.runs.iter().flat_map(|r| r.failures.keys().copied()));
        if notes.is_empty() { notes } else { format!("\nFailures:\n{notes}") }
    }

    fn csv(&self) -> String {
        let mut table = Table::new([
            "engine",
            "topology",
            "strategy",
            "k",
            "calls",
            "succeeded",
            "rounds",
            "wait",
            "retry",
            "callees",
            "plans",
            "callers",
            "caller_subnets",
            "caller_instructions",
            "instructions_per_ping",
            "peak_pings_per_round",
            "cycles",
            "failures",
            "peak_in_flight",
            "time_step",
            "wall_ms",
            "wall_ms_p95",
        ]);
        for r in &self.runs {
            let failures = r.failures.iter().map(|(k, n)| format!("{k:?}={n}")).collect::<Vec<_>>().join(";");
            table.push(vec![
                self.engine.to_string(),
                r.topology.name().into(),
                r.strategy.name().into(),
                r.k.map_or(String::new(), |k| k.to_string()),
                r.calls.to_string(),
                r.succeeded.to_string(),
                r.rounds.to_string(),
                format!("{:?}", r.wait).to_lowercase(),
                r.retry.to_string(),
                r.callees.to_string(),
                r.load.plans.to_string(),
                r.load.callers.to_string(),
                r.load.caller_subnets.to_string(),
                r.caller_instructions.to_string(),
                format!("{:.1}", r.instructions_per_ping),
                r.peak_pings_per_round.to_string(),
                r.cycles.to_string(),
                failures,
                r.peak_in_flight.to_string(),
                r.time_step.to_string(),
                format!("{:.3}", r.wall_ms),
                format!("{:.3}", r.wall_ms_p95),
            ]);
        }
        table.csv()
    }

    /// One table of deterministic figures per topology, then the wall times.
    fn markdown(&self) -> String {
        let mut out = self.markdown_deterministic();
        out += "\nWall time on the machine that ran it (median and p95 of the repeats, ms):\n\n";
        out += "| topology | strategy | k | n | median | p95 |\n|---|---|---:|---:|---:|---:|\n";
        for r in &self.runs {
            let k = r.k.map_or("-".into(), |k| k.to_string());
            out += &format!(
                "| {} | {} | {k} | {} | {:.1} | {:.1} |\n",
                r.topology.name(),
                r.strategy.name(),
                r.calls,
                r.wall_ms,
                r.wall_ms_p95
            );
        }
        out
    }

    /// The tables that depend on nothing but the model (docs/strategies.md's).
    pub fn markdown_deterministic(&self) -> String {
        let mut tables = vec![];
        for topology in self.topologies() {
            let rows: Vec<&Row> = self.runs.iter().filter(|r| r.topology == topology).collect();
            let title = format!(
                "**{}** (engine: {}, time step {} ns per round)\n\n",
                topology.name(),
                self.engine,
                rows[0].time_step
            );
            let load = shows_load(&rows);
            let mut table = Table::new(deterministic_columns(rows[0], load).into_iter().map(|c| c.0));
            for row in rows {
                table.push(deterministic_columns(row, load).into_iter().map(|c| c.1).collect());
            }
            tables.push(title + &table.markdown());
        }
        tables.join("\n") + &self.failure_notes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::RoundsToComplete;
    use crate::scenario::Topology;
    use interface::{Strategy, Wait};
    use std::time::Duration;

    fn report() -> ExampleReport {
        let run = |strategy, succeeded, rounds| Run {
            strategy,
            topology: Topology::CrossSubnet,
            calls: 90,
            succeeded,
            rounds: RoundsToComplete(rounds),
            wall: Duration::from_millis(1500),
            mainnet_seconds: None,
        };
        ExampleReport {
            engine: EngineKind::PocketIc,
            metering: Metering::Replica,
            engine_description: "PocketIC server 16.1.0 (/bin/pocket-ic)".into(),
            runs: vec![run(Strategy::Sequential, 90, 91), run(Strategy::Parallel, 89, 2)],
        }
    }

    #[test]
    fn text_names_the_engine_first_then_the_example_lines() {
        let text = report().render(ExampleFormat::Text);
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
        let json: serde_json::Value = serde_json::from_str(&report().render(ExampleFormat::Json)).unwrap();
        assert_eq!(json["engine"], "pocket-ic");
        assert_eq!(json["metering"], "replica");
        let run = &json["runs"][1];
        assert_eq!(run["strategy"], "parallel");
        assert_eq!(run["topology"], "cross-subnet");
        assert_eq!(run["calls"], 90);
        assert_eq!(run["succeeded"], 89);
        assert_eq!(run["rounds"], 2);
        assert_eq!(run["wall_ms"], 1500.0);
        assert_eq!(json.as_object().unwrap().len(), 3, "only engine, metering and runs");
    }

    #[test]
    fn the_tables_explain_every_failure_they_show_and_only_those() {
        use crate::sweep::Row;
        let row = |failures: &[(FailureKind, u64)]| Row {
            strategy: Strategy::Parallel,
            topology: Topology::CrossSubnet,
            calls: 10_000,
            succeeded: 2374,
            rounds: 2,
            wall_ms: 1.0,
            k: None,
            wait: Wait::Bounded,
            retry: false,
            callees: 16,
            load: crate::load::Load::default(),
            caller_instructions: 0,
            instructions_per_ping: 0.0,
            peak_pings_per_round: 0,
            cycles: 0,
            failures: failures.iter().copied().collect(),
            peak_in_flight: 2374,
            time_step: 1,
            wall_ms_p95: 1.0,
        };
        let report = |runs| SweepReport {
            engine: EngineKind::Sim,
            metering: Metering::Replica,
            engine_description: "sim".into(),
            runs,
        };
        let with = report(vec![row(&[(FailureKind::InsufficientLiquidCycleBalance, 7626)]), row(&[])]);
        for text in [with.render(Format::Text), with.markdown_deterministic()] {
            let notes = text.split_once("Failures:\n").expect("a failures section").1;
            assert_eq!(notes.lines().count(), 1, "{notes}");
            assert!(
                notes.contains("InsufficientLiquidCycleBalance: every call in flight reserves"),
                "{notes}"
            );
            assert!(notes.contains("42.1 G"), "{notes}");
        }
        assert!(!report(vec![row(&[])]).render(Format::Text).contains("Failures:"));
    }
}
