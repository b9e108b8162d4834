//! A query's call graph: the calls a composite query makes to other
//! canisters' queries on its subnet, evaluated at once and depth first, as
//! the replica does (`query_call_graph.rs` and `query_context.rs` in
//! `rs/execution_environment/src/query_handler/`), with its limits and
//! rejects. Nothing any execution in it does is kept.

use candid::Principal;
use std::collections::VecDeque;

use super::Sim;
use crate::canister::{QueryCall, QueryStep};
use crate::message::{CallbackId, ErrorCode, Payload, Reject};

/// How deep calls may nest: the replica's `MAX_QUERY_CALL_DEPTH`.
pub const MAX_QUERY_CALL_DEPTH: usize = 6;

/// What all executions of one query may use together: the replica's
/// `MAX_INSTRUCTIONS_PER_COMPOSITE_QUERY_CALL`.
pub const MAX_QUERY_CALL_GRAPH_INSTRUCTIONS: u64 = 5_000_000_000;

/// Charged for every call besides its executions, so that many small calls
/// cost too: the replica's `INSTRUCTION_OVERHEAD_PER_QUERY_CALL`.
pub const INSTRUCTION_OVERHEAD_PER_QUERY_CALL: u64 = 50_000_000;

/// A call context in the graph and the calls it has yet to make.
struct Pending {
    canister: Principal,
    /// The callback of its caller that its answer goes to; `None` for the
    /// user's query.
    answers: Option<CallbackId>,
    calls: VecDeque<QueryCall>,
}

/// One query's evaluation: its instruction budget (negative once
/// overdrawn, as the replica's round limits) and the canisters it ran on.
struct Graph {
    subnet: usize,
    time: u64,
    instructions_left: i64,
    touched: Vec<Principal>,
}

impl Graph {
    fn limit(&self) -> u64 {
        self.instructions_left.max(0) as u64
    }

    fn spend(&mut self, instructions: u64) {
        self.instructions_left = self.instructions_left.saturating_sub_unsigned(instructions);
    }
}

impl Sim {
    /// Runs a query that reads `data_certificate` (CBOR, the subnet's
    /// certificate of the canister's certified data) through
    /// `ic0.data_certificate_copy`, and every call it makes if it is a
    /// composite query (only the first canister reads the certificate, as
    /// in the replica); nothing any of them does is kept.
    pub fn query_call_certified(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        data_certificate: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, Reject> {
        let subnet = self.canisters.get(&id).ok_or_else(|| super::routing::not_found(id))?.subnet();
        let mut graph = Graph {
            subnet,
            time: self.time,
            instructions_left: MAX_QUERY_CALL_GRAPH_INSTRUCTIONS as i64,
            touched: vec![id],
        };
        let first = self.query_step(&mut graph, id, |canister, limit, time| {
            canister.query(sender, method, arg, time, data_certificate, limit)
        });
        let answer = match first {
            QueryStep::Answer(payload) => Ok(payload),
            QueryStep::Calls(calls) => self.walk(&mut graph, id, calls),
        };
        // A graph cut short leaves call contexts open.
        for canister in graph.touched {
            self.end_evaluation_of(canister);
        }
        match answer? {
            Payload::Reply(data) => Ok(data),
            Payload::Reject(reject) => Err(reject),
        }
    }

    /// The depth-first walk from the root's first calls to its answer.
    fn walk(&mut self, graph: &mut Graph, root: Principal, calls: Vec<QueryCall>) -> Result<Payload, Reject> {
        let mut stack = vec![Pending { canister: root, answers: None, calls: calls.into() }];
        // The answer of the call context popped last, to the one on top.
        let mut answer: Option<(CallbackId, Payload)> = None;
        while let Some(mut node) = stack.pop() {
            if stack.len() >= MAX_QUERY_CALL_DEPTH {
                let message = "Composite query calls exceeded the maximum call depth.";
                return Err(Reject::new(ErrorCode::QueryCallGraphTooDeep, message));
            }
            if graph.instructions_left <= 0 {
                let message = "Composite query calls exceeded the instruction limit.";
                return Err(Reject::new(ErrorCode::QueryCallGraphTotalInstructionLimitExceeded, message));
            }
            let step = match answer.take() {
                Some((callback, payload)) => {
                    self.query_step(graph, node.canister, |canister, limit, time| {
                        canister.query_response(callback, payload, time, limit)
                    })
                }
                None => match node.calls.pop_front() {
                    Some(call) => {
                        let receiver = call.receiver;
                        if receiver == node.canister || stack.iter().any(|p| p.canister == receiver) {
                            let message = "Query calls re-entering the same canister are not allowed yet.";
                            return Err(Reject::new(ErrorCode::QueryCallGraphLoopDetected, message));
                        }
                        let callback = call.callback;
                        stack.push(node);
                        match self.call_in_graph(graph, call) {
                            QueryStep::Answer(payload) => answer = Some((callback, payload)),
                            QueryStep::Calls(calls) => stack.push(Pending {
                                canister: receiver,
                                answers: Some(callback),
                                calls: calls.into(),
                            }),
                        }
                        continue;
                    }
                    None => {
                        self.end_evaluation_of(node.canister);
                        let message = format!("Canister {} did not produce a response", node.canister);
                        QueryStep::Answer(Payload::reject(ErrorCode::CanisterDidNotReply, message))
                    }
                },
            };
            match (step, node.answers) {
                (QueryStep::Calls(calls), _) => {
                    node.calls.extend(calls);
                    stack.push(node);
                }
                (QueryStep::Answer(payload), None) => return Ok(payload),
                (QueryStep::Answer(payload), Some(callback)) => answer = Some((callback, payload)),
            }
        }
        unreachable!("the root's call context answers before the stack empties")
    }

    /// A call a composite query made: the callee's query, if it is a
    /// canister on the same subnet.
    fn call_in_graph(&mut self, graph: &mut Graph, call: QueryCall) -> QueryStep {
        if call.receiver == Principal::management_canister() {
            let message = "The simulator does not run calls to the management canister from composite \
                           queries; call it from an update method.";
            return QueryStep::Answer(Payload::reject(ErrorCode::CanisterRejectedMessage, message));
        }
        // On the replica a canister of another subnet is not in the state
        // the graph runs on.
        if self.canisters.get(&call.receiver).is_none_or(|c| c.subnet() != graph.subnet) {
            return QueryStep::Answer(Payload::Reject(Reject::canister_not_found(call.receiver)));
        }
        graph.touched.push(call.receiver);
        let QueryCall { sender, receiver, method, arg, .. } = call;
        let step = self.query_step(graph, receiver, |canister, limit, time| {
            canister.query(sender, &method, arg, time, None, limit)
        });
        graph.spend(INSTRUCTION_OVERHEAD_PER_QUERY_CALL);
        step
    }

    /// Runs one execution on canister `id` within the graph's budget; an
    /// answer ends the canister's part of the evaluation.
    fn query_step(
        &mut self,
        graph: &mut Graph,
        id: Principal,
        execute: impl FnOnce(&mut crate::canister::Canister, u64, u64) -> (QueryStep, u64),
    ) -> QueryStep {
        let canister = self.canisters.get_mut(&id).expect("a canister of the graph");
        let (step, instructions) = execute(canister, graph.limit(), graph.time);
        graph.spend(instructions);
        if matches!(step, QueryStep::Answer(_)) {
            canister.end_query_evaluation();
        }
        step
    }

    fn end_evaluation_of(&mut self, id: Principal) {
        if let Some(canister) = self.canisters.get_mut(&id) {
            canister.end_query_evaluation();
        }
    }
}
