//! Host functions for time, the global timer and the instruction counters.

use wasmi::Error;

use super::linker::{Registry, def};
use super::{instructions_used, trap};

pub(super) fn register(r: &mut Registry) {
    def!(r, "time", |c: Ctx<'_>| -> Result<i64, Error> { Ok(c.data_mut().exec()?.context.time as i64) });
    def!(r, "global_timer_set", |c: Ctx<'_>, timestamp: i64| -> Result<i64, Error> {
        let previous = c.data().global_timer;
        let exec = c.data_mut().exec()?;
        let previous = exec.effects.timer.unwrap_or(previous);
        exec.effects.timer = Some(timestamp as u64);
        Ok(previous as i64)
    });
    def!(r, "performance_counter", |c: Ctx<'_>, counter: i32| -> Result<i64, Error> {
        let now = instructions_used(&c);
        let before = c.data().exec.as_ref().map_or(0, |e| e.context.call_context_instructions);
        match counter {
            0 => Ok(now as i64),
            1 => Ok((before + now) as i64),
            _ => trap(format!("performance_counter: unknown counter type {counter}")),
        }
    });
}
