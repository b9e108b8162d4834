//! Playback: a recorded execution run again, every `ic0` import answering from its tape.

use std::rc::Rc;
use wasmi::{Caller, Engine, Error, Linker, Memory, Module, Store, Val, ValType};

use super::{Code, CompiledModule, Entry, Snapshot};
use crate::module::{GROW_IMPORT, WasmError};
use crate::system_api::{self, CanisterTrap, TapeEvent};

/// One committed message execution: enough to run it again exactly.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub(crate) entry: Entry,
    pub(crate) tape: Vec<TapeEvent>,
    /// Its place among every traced execution of the process (see
    /// [`crate::bench`]); 0 when not traced.
    pub(crate) order: u64,
}

/// The store data of a playback instance: the tape being played.
#[derive(Default)]
pub struct Playback {
    pub(super) memory: Option<Memory>,
    tape: Vec<TapeEvent>,
    next: usize,
}

/// A store with a playback instance of one module.
pub struct Replayer {
    store: Store<Playback>,
    code: Code,
}

impl Replayer {
    /// A fresh instance of `module`, as a canister has it before `canister_init`.
    pub fn new(engine: &Engine, module: Rc<CompiledModule>) -> Result<Self, WasmError> {
        let mut store = Store::new(engine, Playback::default());
        let code = Code::instantiate_playback(&mut store, module)?;
        Ok(Self { store, code })
    }

    pub fn load(&mut self, snapshot: &Snapshot) {
        self.code.load(&mut self.store, snapshot);
    }

    /// Runs a recorded execution again; it does exactly what it did then.
    pub fn replay(&mut self, recorded: Recorded) -> Result<(), CanisterTrap> {
        let data = self.store.data_mut();
        data.tape = recorded.tape;
        data.next = 0;
        // It passed its limit when it ran; host functions charge nothing here.
        let (_, trap) = self.code.run(&mut self.store, &recorded.entry, u64::MAX);
        trap.map_or(Ok(()), Err)
    }

    pub fn snapshot(&self) -> Snapshot {
        self.code.snapshot(&self.store)
    }
}

/// A linker whose every `ic0` function plays the tape: it applies the
/// recorded memory writes and returns the recorded value.
pub(super) fn playback_linker(
    engine: &Engine,
    module: &Module,
    memory64: bool,
) -> Result<Linker<Playback>, WasmError> {
    let mut linker = Linker::new(engine);
    for import in module.imports() {
        if (import.module(), import.name()) == GROW_IMPORT {
            // Not a system call: it grows the memory, as the instruction did.
            let defined = if memory64 {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, replay_grow::<i64>)
            } else {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, replay_grow::<i32>)
            };
            defined.map_err(|e| WasmError::Link(e.to_string()))?;
            continue;
        }
        let wasmi::ExternType::Func(ty) = import.ty() else {
            return Err(WasmError::NotAFunction {
                module: import.module().into(),
                name: import.name().into(),
            });
        };
        let result_type = ty.results().first().copied();
        linker
            .func_new(import.module(), import.name(), ty.clone(), move |caller, _params, results| {
                play_host_call(caller, result_type, results)
            })
            .map_err(|e| WasmError::Link(e.to_string()))?;
    }
    Ok(linker)
}

/// `memory.grow` as it went live: the tape holds no event for it, as it is
/// no system call, and growing again from the same size does the same.
fn replay_grow<I: system_api::Word>(mut caller: Caller<'_, Playback>, delta: I) -> Result<I, Error> {
    let memory = caller.data().memory.ok_or_else(|| Error::new("playback: no memory"))?;
    Ok(memory.grow(&mut caller, delta.to_u64()).map_or(I::MINUS_ONE, |old| I::of_len(old as usize)))
}

fn play_host_call(
    mut caller: Caller<'_, Playback>,
    result: Option<ValType>,
    results: &mut [Val],
) -> Result<(), Error> {
    let memory = caller.data().memory.expect("set at instantiation");
    let (data, playback) = memory.data_and_store_mut(&mut caller);
    loop {
        let Some(event) = playback.tape.get(playback.next) else {
            return Err(Error::new("playback: the tape ended before the message did"));
        };
        playback.next += 1;
        match event {
            TapeEvent::Write { dst, bytes } => {
                let at = *dst as usize;
                data[at..at + bytes.len()].copy_from_slice(bytes);
            }
            TapeEvent::Return(value) => {
                if let (Some(slot), Some(ty)) = (results.first_mut(), result) {
                    *slot = if ty == ValType::I32 { Val::I32(*value as i32) } else { Val::I64(*value) };
                }
                return Ok(());
            }
        }
    }
}
