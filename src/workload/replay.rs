//! A recorded job as call specs: one spec per recorded call, its program the call's
//! recorded steps (`config::replay`); the normal calls of one function and request share
//! a scheduling class (`CallSpec::class`), as in Ray.
//!
//! Owns: turning a [`ReplayJob`] into specs. A held stretch is an `Op::Hold` (the worker
//! is held, no CPU of the model's is used: Ray's rows do not say whether the call computed
//! or slept; the overshoot of a sleep and the submit costs are in the stretches already),
//! but for what a call computes of its held time, from its first µs, an `Op::Cpu`
//! (`simulate --cpu`); a submit is an [`Op::Replay`], which pays no submit cost; a
//! `ray.get` is an `Op::Get`.
//! Must never: change the recorded calls' order or their parents.

use super::{Builder, JobTemplate, Op, SpecId};
use crate::config::replay::{ReplayConfig, ReplayKind, ReplayStep};
use crate::model::{NameId, ResourceRequest, TaskType};
use crate::workload::ActorOptions;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

impl Builder<'_> {
    pub(super) fn replay(&mut self, c: &ReplayConfig) -> JobTemplate {
        let job = &c.job;
        let first = self.specs.len() as u32;
        for _ in &job.calls {
            self.reserve();
        }
        let spec_of = |call: u32| first + call;
        for (i, call) in job.calls.iter().enumerate() {
            let mut cpu = 0.0;
            let mut gpu = 0.0;
            let mut memory = 0u64;
            let mut custom = BTreeMap::new();
            for (name, amount) in &call.resources {
                match name.as_str() {
                    "CPU" => cpu = *amount,
                    "GPU" => gpu = *amount,
                    "memory" => memory = amount.max(0.0) as u64,
                    other => {
                        custom.insert(other.to_string(), *amount);
                    }
                }
            }
            let request = if call.kind == ReplayKind::ActorCreation && call.resources.is_empty() {
                ResourceRequest::cpu(1.0)
            } else {
                self.request(cpu, gpu, memory, &custom)
            };
            let held: u64 = call.steps.iter().map(|s| if let ReplayStep::Hold(us) = s { *us } else { 0 }).sum();
            let mut computes = call.computes.of(held);
            let mut program: Vec<Op> = Vec::with_capacity(call.steps.len());
            for step in &call.steps {
                match step {
                    // The first of its held time computes (`--cpu`), the rest is held.
                    ReplayStep::Hold(us) => {
                        let cpu = computes.min(*us);
                        computes -= cpu;
                        if cpu > 0 {
                            program.push(Op::Cpu(cpu));
                        }
                        if *us > cpu {
                            program.push(Op::Hold(us - cpu));
                        }
                    }
                    ReplayStep::Get => program.push(Op::Get),
                    ReplayStep::Submit(c) => {
                        let callee = &job.calls[*c as usize];
                        program.push(Op::Replay {
                            spec: spec_of(*c),
                            call: *c,
                            actor: callee.actor,
                            create: callee.kind == ReplayKind::ActorCreation,
                            deps: callee.deps.clone().into_boxed_slice(),
                        });
                    }
                }
            }
            let name = self.names.intern(&call.name);
            let class = self.names.intern(&call.class);
            let s = &mut self.specs[first as usize + i];
            s.name = name;
            s.program = program;
            s.request = request;
            s.return_size = call.return_bytes;
            // The recorded execution ends when the call did, its return's put included.
            s.put_in_body = true;
            match call.kind {
                ReplayKind::Driver => s.kind = TaskType::DriverTask,
                ReplayKind::Function => s.kind = TaskType::NormalTask,
                ReplayKind::Method => s.kind = TaskType::ActorTask,
                ReplayKind::ActorCreation => {
                    s.kind = TaskType::ActorCreationTask;
                    s.actor = Some(ActorOptions {
                        class,
                        max_restarts: 0,
                        max_task_retries: 0,
                        max_concurrency: 1,
                        holds_resources: !call.resources.is_empty(),
                    });
                }
            }
        }
        // Ray's scheduling class is the function and its request: its raylet serves
        // classes in turn, and an owner keeps a lease for its next call of the same
        // class. So a function's calls share one class here, read through the first.
        let mut classes: FxHashMap<(NameId, ResourceRequest), SpecId> = FxHashMap::default();
        for id in first..first + job.calls.len() as SpecId {
            let s = &self.specs[id as usize];
            if s.kind != TaskType::NormalTask {
                continue;
            }
            let class = *classes.entry((s.name, s.request.clone())).or_insert(id);
            self.specs[id as usize].class = class;
        }
        JobTemplate {
            name: c.name.clone(),
            entrypoint: format!("replay of {}", job.source),
            driver: spec_of(0),
            tasks: 0,
        }
    }
}
