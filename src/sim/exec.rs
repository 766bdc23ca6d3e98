//! The interpreter for task bodies (`workload::Op`).
//!
//! Owns: stepping a running task's program, with its program counter and interpreter
//! state in the task's run (`task_runs.rs`). Must never: change a task's state other
//! than through the model's transitions, or run a task whose attempt is no longer running.

use super::clock::Event;
use super::core_worker::caller_work;
use super::core_worker::futures::{block_in_get, hold_futures};
use super::core_worker::task_runs::TaskRuns;
use super::engine::Engine;
use super::follow::{cx, Follow};
use super::gcs::actors::{ActorManager, NewActor};
use super::objects::pull::must_pull;
use super::objects::{get_cost, put_cost_on, unref_object};
use super::raylet::task_run::running_attempt;
use crate::config::{DurationDist, SchedulerConfig};
use crate::model::*;
use crate::workload::{FlagRule, LevelRule, Op, Shape};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Tasks one `Submit` step hands to the scheduler before the submitter pays for them
/// (their submit cost each) and yields.
const SUBMIT_CHUNK: u32 = 1_000;

/// How far a replayed caller's next calls are looked at for the backlog behind a call:
/// more than any node's start slots, so the count the raylet prestarts from is exact, and
/// a caller of a million same-instant calls costs a bounded look per call.
const BACKLOG_LOOKAHEAD: usize = 1024;

impl Engine {
    /// Run a task's program from its program counter until it blocks or ends.
    pub(crate) fn run_program(&mut self, tid: TaskId) {
        loop {
            let Some(t) = self.model.tasks.get(&tid) else { return };
            if t.state() != TaskState::Running {
                return;
            }
            let (spec_id, attempt, node) = (t.spec, t.attempt, t.node.get());
            let run = self.runs.get_mut(&tid).expect("a running task has a run");
            self.flow.resumed(&self.model, run, tid, self.clock.now);
            let pc = run.pc as usize;
            let program = &self.specs[spec_id as usize].program;
            let Some(op) = program.get(pc) else {
                if pc == program.len() && caller_work::pay_return_put(cx!(self), tid, attempt, spec_id) {
                    return;
                }
                if caller_work::pay_first_call(cx!(self), tid, attempt) {
                    return;
                }
                self.follow(Follow::FinishTask(tid));
                return;
            };
            match op {
                Op::Compute(d) => {
                    let d = *d;
                    let dur = sample(&mut self.rng, d);
                    let cpus = self.specs[spec_id as usize].request.get(ResourceId::CPU).to_f64().max(1.0);
                    run.pc += 1;
                    if let Some(n) = node {
                        super::raylet::count_cpu_busy(&mut self.model, n, (dur as f64 * cpus) as u64);
                    }
                    self.clock.schedule_in(dur, Event::OpDone(tid, attempt));
                    return;
                }
                Op::Sleep(us) => {
                    let us = slept(&self.cfg.scheduler, *us);
                    run.pc += 1;
                    self.clock.schedule_in(us, Event::OpDone(tid, attempt));
                    return;
                }
                Op::Cpu(us) => {
                    let us = *us;
                    run.pc += 1;
                    if let Some(n) = node {
                        super::raylet::count_cpu_busy(&mut self.model, n, us);
                    }
                    let done = caller_work::place_work(cx!(self), tid, us);
                    self.clock.schedule_at(done, Event::OpDone(tid, attempt));
                    return;
                }
                Op::Hold(us) => {
                    let us = *us;
                    run.pc += 1;
                    self.clock.schedule_in(us, Event::OpDone(tid, attempt));
                    return;
                }
                Op::Submit { spec, count, take_futures, with_puts } => {
                    let (spec, count, take, with_puts) = (*spec, *count, *take_futures, *with_puts);
                    if count > 0 && caller_work::pay_first_submit(cx!(self), tid, attempt) {
                        return;
                    }
                    // The caller's loop of `.remote()` calls is on its core before the
                    // raylets act on the lease requests it sends (a worker start is
                    // placed behind it): its work is placed first, its tasks handed over
                    // at once, and it goes on once that work ends.
                    if take {
                        let paid = caller_work::place_submit_cost(cx!(self), tid, spec, count);
                        self.op_submit(tid, attempt, spec, count, true, with_puts);
                        if !advance(&self.model, &mut self.runs, tid, attempt)
                            || caller_work::resume_at(cx!(self), tid, attempt, paid)
                        {
                            return;
                        }
                        continue;
                    }
                    // A caller submits at a finite rate: a chunk at a time.
                    let done = self.runs.get(&tid).expect("a running task has a run").exec.i;
                    let chunk = (count - done.min(count)).min(SUBMIT_CHUNK);
                    let paid = caller_work::place_submit_cost(cx!(self), tid, spec, chunk);
                    self.op_submit(tid, attempt, spec, chunk, false, with_puts);
                    if !running_attempt(&self.model, tid, attempt) {
                        return;
                    }
                    let r = self.runs.get_mut(&tid).expect("running task has a run");
                    r.exec.i += chunk;
                    if r.exec.i >= count {
                        r.exec.i = 0;
                        r.pc += 1;
                    }
                    if caller_work::resume_at(cx!(self), tid, attempt, paid) {
                        return;
                    }
                }
                Op::CreateActors { spec, level, shape } => {
                    let (spec, level, shape) = (*spec, *level, shape.clone());
                    if creates_any(&self.model, tid, level, &shape)
                        && caller_work::pay_first_submit(cx!(self), tid, attempt)
                    {
                        return;
                    }
                    let paid = self.op_create_actors(tid, spec, level, &shape);
                    if !advance(&self.model, &mut self.runs, tid, attempt)
                        || caller_work::resume_at(cx!(self), tid, attempt, paid)
                    {
                        return;
                    }
                }
                Op::CallEach { method, calls, sleep, bottleneck_sleep } => {
                    let (method, calls, sleep, extra) = (*method, *calls, *sleep, *bottleneck_sleep);
                    if self.op_call_each(tid, method, calls, sleep, extra) {
                        return;
                    }
                }
                Op::Get => {
                    let r = run;
                    if r.exec.unresolved > 0 {
                        self.flow.blocked(&self.model, &mut self.runs, tid, self.clock.now);
                        let follows = block_in_get(cx!(self), tid);
                        self.follow_all(follows);
                        return;
                    }
                    if r.exec.failed_futures > 0 {
                        // The exception re-raises in the caller (RayTaskError).
                        self.follow(Follow::FailTask(tid, ErrorType::TaskExecutionException, true));
                        return;
                    }
                    if self.pull_for_get(tid, attempt, node) {
                        return;
                    }
                    // The getter copies each return it gets out of the store (a put
                    // of its own is not among what it waits for).
                    let r = self.runs.get_mut(&tid).expect("running task has a run");
                    let cost: f64 = r
                        .exec
                        .futures
                        .iter()
                        .filter_map(|f| self.model.objects.get(f))
                        .filter(|o| !o.inline && o.producer.is_some())
                        .map(|o| get_cost(&self.cfg, &self.specs, o))
                        .sum();
                    r.pc += 1;
                    self.follow(Follow::ReleaseTaskRefs(tid, false));
                    if caller_work::work_then_resume(cx!(self), tid, attempt, crate::model::time::round_to_u64(cost)) {
                        return;
                    }
                }
                Op::Put(size) => {
                    let size = *size;
                    let head = self.node_manager.head();
                    let cost = put_cost_on(&self.cfg, &self.model, node.unwrap_or(head), size);
                    let follows = self.plasma.put(cx!(self), &self.actor_manager, head, tid, attempt, size);
                    self.follow_all(follows);
                    // Sealed at once; the caller then works for the put's cost.
                    if !advance(&self.model, &mut self.runs, tid, attempt)
                        || caller_work::work_then_resume(cx!(self), tid, attempt, cost)
                    {
                        return;
                    }
                }
                Op::CreatePlacementGroup { bundles, strategy } => {
                    let (bundles, strategy) = (bundles.clone(), *strategy);
                    let (pg, follows) = self.pg_manager.create(cx!(self), tid, bundles, strategy);
                    self.follow_all(follows);
                    let created = self.model.pgs().get(&pg).is_some_and(|p| p.state() == PgState::Created);
                    let r = self.runs.get_mut(&tid).expect("running task has a run");
                    r.exec.pg = Some(pg);
                    if !created {
                        // `ray.get(pg.ready())`: resumed when the group is placed.
                        self.model.set_task_state(tid, TaskState::RunningInRayGet, self.clock.now);
                        self.flow.blocked(&self.model, &mut self.runs, tid, self.clock.now);
                        return;
                    }
                    r.pc += 1;
                }
                Op::RemovePlacementGroup => {
                    let r = self.runs.get_mut(&tid).expect("running task has a run");
                    r.pc += 1;
                    if let Some(pg) = r.exec.pg.take() {
                        self.follow(Follow::RemovePlacementGroup(pg));
                    }
                }
                Op::Replay { spec, call, actor, create, ref deps } => {
                    let (spec, call, actor, create, deps) = (*spec, *call, *actor, *create, deps.clone());
                    if self.op_replay(tid, attempt, spec, call, actor, create, &deps) {
                        return;
                    }
                }
                Op::Repeat { to, times } => {
                    let (to, times) = (*to, *times);
                    let r = run;
                    if r.exec.loops < times {
                        r.exec.loops += 1;
                        r.pc = to;
                    } else {
                        r.exec.loops = 0;
                        r.pc += 1;
                    }
                }
            }
        }
    }

    fn op_submit(&mut self, tid: TaskId, attempt: u32, spec: u32, count: u32, take: bool, with_puts: bool) {
        let mut inputs = Vec::new();
        let r = self.runs.get_mut(&tid).expect("running task has a run");
        // What it put (usually nothing: no allocation).
        let puts = r.exec.puts.clone();
        let shared: &[ObjectId] = if with_puts { &puts } else { &[] };
        if take {
            // The objects it put stay its own (and among its futures). With none, the
            // futures are the inputs as they stand: at a fan-out's reduce a million of
            // them, not worth a copy at the run's peak of memory.
            inputs = std::mem::take(&mut r.exec.futures);
            if !puts.is_empty() {
                let (kept, taken) = inputs.into_iter().partition(|f| puts.contains(f));
                r.exec.futures = kept;
                inputs = taken;
            }
            r.exec.unresolved = 0;
            r.exec.failed_futures = 0;
            for f in &inputs {
                if let Some(o) = self.model.objects.get_mut(f) {
                    o.owner_waits = false;
                }
            }
        }
        let per = if count > 0 { inputs.len().div_ceil(count as usize) } else { 0 };
        let mut returns = Vec::with_capacity(count as usize);
        for i in 0..count as usize {
            let mut args = shared.to_vec();
            if take && per > 0 {
                let lo = (i * per).min(inputs.len());
                let hi = ((i + 1) * per).min(inputs.len());
                args.extend_from_slice(&inputs[lo..hi]);
            }
            let args: ObjectList = args.into();
            self.queues.submitting(Some((tid, count - 1 - i as u32)));
            let (_, ret, follows) = super::core_worker::tasks::submit(
                cx!(self),
                &mut self.flow,
                self.node_manager.head(),
                super::core_worker::tasks::Call { spec, parent: tid, args, actor: None, bundle: None },
            );
            self.follow_all(follows);
            returns.push(ret);
        }
        self.queues.submitting(None);
        // The consumers now hold the inputs; the submitter's own references go.
        for f in inputs {
            unref_object(&mut self.model, f);
        }
        let follows = hold_futures(&mut self.model, &mut self.runs, tid, attempt, returns);
        self.follow_all(follows);
    }

    /// A getter whose futures are all ready: what it waits for that is not in memory on
    /// its node is pulled there first, and it waits in `ray.get` until the bytes arrive
    /// (true), its CPU lent back as while it waited for them to be made. False once they
    /// have (it goes on to copy them), or when all are there.
    fn pull_for_get(&mut self, tid: TaskId, attempt: u32, node: Option<NodeIdx>) -> bool {
        let node = node.unwrap_or(self.node_manager.head());
        let r = self.runs.get_mut(&tid).expect("running task has a run");
        if std::mem::take(&mut r.exec.pulling) {
            return false;
        }
        let objects = &self.model.objects;
        let away: ObjectList = r
            .exec
            .futures
            .iter()
            .copied()
            .filter(|f| objects.get(f).is_some_and(|o| o.producer.is_some() && must_pull(o, node)))
            .collect();
        if away.is_empty() {
            return false;
        }
        r.exec.pulling = true;
        self.flow.blocked(&self.model, &mut self.runs, tid, self.clock.now);
        // Blocked as on unready futures: a normal task lends its CPU back. The node's
        // freed CPU goes to others once the pull is under way.
        let lent = block_in_get(cx!(self), tid);
        let follows = self.plasma.pull_for_get(cx!(self), &self.actor_manager, tid, attempt, node, away);
        self.follow_all(follows);
        self.follow_all(lent);
        true
    }

    /// Create the step's actors, their caller's submit cost placed on its cores first:
    /// when that work ends (None for none, or no actors).
    fn op_create_actors(&mut self, tid: TaskId, spec: u32, level: LevelRule, shape: &Shape) -> Option<u64> {
        let Children { creator: self_actor, level: child_level, given } = children_of(&self.model, tid, level, shape)?;
        let count = match shape {
            Shape::Drawn { min, max, .. } if max > min => self.rng.random_range(*min..=*max),
            Shape::Drawn { min, .. } => *min,
            Shape::Given(_) => given.len() as u32,
        };
        // As for `Submit`: the caller's loop of creations is on its core before the
        // worker starts they ask for.
        let paid = caller_work::place_submit_cost(cx!(self), tid, spec, count);
        let pg = self.runs[&tid].exec.pg;
        let in_pg = matches!(self.specs[spec as usize].strategy, crate::workload::StrategySpec::CallerPlacementGroup);
        for i in 0..count {
            let (child_flag, tree_node) = match shape {
                Shape::Given(tree) => {
                    let node = given[i as usize];
                    (tree.nodes[node as usize].flag, Some(node))
                }
                Shape::Drawn { flag: FlagRule::Random(p), .. } => (self.rng.random::<f64>() < *p, None),
                Shape::Drawn { flag: FlagRule::Fixed(f), .. } => (*f, None),
            };
            let bundle = if in_pg { pg.map(|p| (p, i)) } else { None };
            let new = NewActor { spec_id: spec, creator: tid, level: child_level, flag: child_flag, bundle };
            let (aid, follows) = ActorManager::create(cx!(self), &mut self.flow, self.node_manager.head(), new);
            self.follow_all(follows);
            ActorManager::place_in_tree(&mut self.model, aid, tree_node);
            // The new handle is its creator's: the actor's when an actor made it, else the task's.
            match self_actor.is_some_and(|a| ActorManager::child_created(&mut self.model, a, aid)) {
                true => {}
                false => {
                    if let Some(r) = self.runs.get_mut(&tid) {
                        r.exec.handles.push(aid);
                    }
                }
            }
        }
        paid
    }

    /// One call of a replayed job: create the actor of its slot, or submit the call with
    /// its recorded arguments (the returns of earlier calls still alive). No submit cost
    /// is paid: the recorded stretches hold what submitting cost on Ray. Returns true
    /// when the task must not go on (its attempt ended).
    #[allow(clippy::too_many_arguments)]
    fn op_replay(
        &mut self,
        tid: TaskId,
        attempt: u32,
        spec: u32,
        call: u32,
        actor: Option<u32>,
        create: bool,
        deps: &[u32],
    ) -> bool {
        let job = self.model.tasks[&tid].job;
        let r = self.runs.get_mut(&tid).expect("running task has a run");
        r.pc += 1;
        if create {
            let new = NewActor { spec_id: spec, creator: tid, level: 0, flag: false, bundle: None };
            let (aid, follows) = ActorManager::create(cx!(self), &mut self.flow, self.node_manager.head(), new);
            self.follow_all(follows);
            if let Some(slot) = actor {
                self.replay.set_actor(job, slot, aid);
            }
            // The recorded stretch after it holds what submitting cost on Ray.
            return false;
        }
        let on = match actor {
            Some(slot) => match self.replay.actor(job, slot) {
                Some(a) => Some(a),
                // Its actor was never created (its constructor was not recorded): skip it.
                None => return false,
            },
            None => None,
        };
        let mut unsubmitted = None;
        let args: ObjectList = deps
            .iter()
            .filter_map(|d| {
                let output = self.replay.output(job, *d);
                if output.is_none() {
                    unsubmitted.get_or_insert(*d);
                }
                output
            })
            .filter(|o| self.model.objects.contains_key(o))
            .collect();
        // A producer submitted after its consumer cannot happen on Ray: the recording's
        // order is off (same-ms submits are ordered producers first, `flow::replay`).
        if let Some(producer) = unsubmitted.filter(|_| self.replay.first_dropped_dep(job)) {
            tracing::warn!(
                job = %job,
                call,
                producer,
                "a replayed call takes the return of a call not submitted yet: that argument is left out"
            );
        }
        let behind = if on.is_none() { self.replay_calls_behind(tid, spec) } else { 0 };
        self.queues.submitting(Some((tid, behind)));
        let (_, ret, follows) = super::core_worker::tasks::submit(
            cx!(self),
            &mut self.flow,
            self.node_manager.head(),
            super::core_worker::tasks::Call { spec, parent: tid, args, actor: on, bundle: None },
        );
        self.follow_all(follows);
        self.queues.submitting(None);
        self.replay.set_output(job, call, ret);
        let follows = hold_futures(&mut self.model, &mut self.runs, tid, attempt, vec![ret]);
        self.follow_all(follows);
        // Past a call answered at once (this very attempt ended meanwhile), stop.
        !running_attempt(&self.model, tid, attempt)
    }

    /// How many calls of the same function replayed caller `tid` submits right behind
    /// the one of `spec` it is submitting now (recorded in the same instant: no held time
    /// between): the backlog its lease request carries. Counted up to
    /// [`BACKLOG_LOOKAHEAD`]: a raylet prestarts no more than its free start slots.
    fn replay_calls_behind(&self, tid: TaskId, spec: u32) -> u32 {
        let (Some(t), Some(run)) = (self.model.tasks.get(&tid), self.runs.get(&tid)) else { return 0 };
        let name = self.specs[spec as usize].name;
        let next = self.specs[t.spec as usize].program.get(run.pc as usize..).unwrap_or_default();
        next.iter()
            .take(BACKLOG_LOOKAHEAD)
            .map_while(|op| match op {
                Op::Replay { spec: s, actor: None, create: false, .. } => Some(*s),
                _ => None,
            })
            .filter(|s| self.specs[*s as usize].name == name)
            .count() as u32
    }

    /// Returns true when the task must wait (it sleeps, or pays for the call it submitted);
    /// false to continue with the next op.
    fn op_call_each(&mut self, tid: TaskId, method: u32, calls: u32, sleep: u64, extra: u64) -> bool {
        let (t, run) = (&self.model.tasks[&tid], &self.runs[&tid]);
        let attempt = t.attempt;
        let self_actor =
            if t.kind == TaskType::ActorCreationTask || t.kind == TaskType::ActorTask { t.actor.get() } else { None };
        let (handle, bottleneck_leaf_parent) = {
            let (handles, flagged): (&[ActorId], bool) = match self_actor.and_then(|a| self.model.actors().get(&a)) {
                // `if self.is_bottleneck and self.depth - 1 <= 0`
                Some(a) => (&a.children, a.flag && a.level <= 1),
                None => (&run.exec.handles, false),
            };
            (handles.get(run.exec.i as usize).copied(), flagged)
        };
        let Some(child) = handle else {
            let r = self.runs.get_mut(&tid).expect("running task has a run");
            r.exec.i = 0;
            r.exec.j = 0;
            r.pc += 1;
            return false;
        };
        // Two `time.sleep` calls in the seed's loop when flagged: each returns late.
        let pause = slept(&self.cfg.scheduler, sleep)
            + if bottleneck_leaf_parent { slept(&self.cfg.scheduler, extra) } else { 0 };
        let r = self.runs.get_mut(&tid).expect("running task has a run");
        if pause > 0 && !r.exec.slept {
            r.exec.slept = true;
            self.clock.schedule_in(pause, Event::OpDone(tid, attempt));
            return true;
        }
        r.exec.slept = false;
        r.exec.j += 1;
        if r.exec.j >= calls {
            r.exec.j = 0;
            r.exec.i += 1;
        }
        let (_, ret, follows) = super::core_worker::tasks::submit(
            cx!(self),
            &mut self.flow,
            self.node_manager.head(),
            super::core_worker::tasks::Call {
                spec: method,
                parent: tid,
                args: ObjectList::EMPTY,
                actor: Some(child),
                bundle: None,
            },
        );
        self.follow_all(follows);
        let follows = hold_futures(&mut self.model, &mut self.runs, tid, attempt, vec![ret]);
        self.follow_all(follows);
        caller_work::pay_submit_cost(cx!(self), tid, attempt, method, 1)
    }
}

/// Whether a `CreateActors` step of `tid` creates any actor, known before the count
/// is drawn: a leaf creates none (and pays no first-submit setup), nor a `max` of 0;
/// no other draw gives 0 (validation holds `min_children` at 1 or more).
fn creates_any(m: &Model, tid: TaskId, level: LevelRule, shape: &Shape) -> bool {
    children_of(m, tid, level, shape).is_some_and(|c| match shape {
        Shape::Given(_) => !c.given.is_empty(),
        Shape::Drawn { max, .. } => *max > 0,
    })
}

/// What a `CreateActors` step of `tid` creates, before any count is drawn; None for
/// a leaf (`BelowParent` at level 0). An explicit tree names the children; otherwise
/// their number is drawn, and each one's flag just before it is created, as the
/// seed's Python does (`Worker.remote(..., is_bottleneck=random.randint(0, 1) == 1)`).
fn children_of(m: &Model, tid: TaskId, level: LevelRule, shape: &Shape) -> Option<Children> {
    let creator = m
        .tasks
        .get(&tid)
        .filter(|t| matches!(t.kind, TaskType::ActorCreationTask | TaskType::ActorTask))
        .and_then(|t| t.actor.get());
    let parent = creator.and_then(|a| m.actors().get(&a));
    let level = match level {
        LevelRule::Fixed(l) => l,
        LevelRule::BelowParent => parent.map_or(0, |a| a.level).checked_sub(1)?,
    };
    let given = match (shape, parent.and_then(|a| a.tree_node)) {
        (Shape::Given(tree), Some(n)) => tree.nodes[n as usize].children.clone(),
        (Shape::Given(_), None) => vec![0],
        (Shape::Drawn { .. }, _) => Vec::new(),
    };
    Some(Children { creator, level, given })
}

/// A duration drawn from `d` (uniform between its bounds).
fn sample(rng: &mut ChaCha8Rng, d: DurationDist) -> u64 {
    if d.max.0 > d.min.0 {
        rng.random_range(d.min.0..=d.max.0)
    } else {
        d.min.0
    }
}

/// What a `CreateActors` step creates ([`Engine::children_of`]): the creating actor
/// (None for a driver or a task), the children's level, and an explicit tree's child
/// nodes (empty for a drawn shape).
struct Children {
    creator: Option<ActorId>,
    level: u32,
    given: Vec<u32>,
}

/// What a `time.sleep(us)` really takes in a worker.
fn slept(cfg: &SchedulerConfig, us: u64) -> u64 {
    if us == 0 {
        return 0;
    }
    us.saturating_add(cfg.sleep_overshoot.as_micros())
}

/// Past an op that may have run other code (a call answered at once, the memory
/// monitor killing this very worker): move on only if this attempt still runs.
fn advance(m: &Model, runs: &mut TaskRuns, tid: TaskId, attempt: u32) -> bool {
    if !running_attempt(m, tid, attempt) {
        return false;
    }
    runs.get_mut(&tid).expect("running task has a run").pc += 1;
    true
}
