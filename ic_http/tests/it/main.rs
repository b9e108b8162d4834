//! The IC HTTP interface's integration tests, one module per subject, in one
//! binary so that the servers and the agent are linked once.

mod agent;
mod ic_http_on_sim;
