//! An object's life after its record is made: its readers woken or failed when it is
//! sealed or lost, its references dropped, a `ray.put` sealed, a lost object rebuilt
//! from its lineage, and a task's return made.

use super::*;

/// A sealed object wakes its owner (if it counts this future) and the tasks waiting for
/// it as an argument ([`Follow::ArgReady`], each read when its turn comes), then goes if
/// nobody holds it (an actor handle's creation return goes as soon as it exists).
pub(crate) fn wake_readers(m: &mut Model, id: ObjectId) -> Follows {
    let Some(o) = m.objects.get_mut(&id) else { return Follows::new() };
    let waiters = std::mem::take(&mut o.waiters);
    let owner = o.owner_waits.then_some(Follow::FutureResolved(o.owner, false));
    readers_then_free(m, id, owner, waiters.into_iter().map(Follow::ArgReady))
}

/// One of a waiting task's arguments is ready: the task is ready itself once none is
/// missing (unless it stopped waiting meanwhile).
pub(crate) fn arg_ready(m: &Model, runs: &mut TaskRuns, w: TaskId) -> Follows {
    let (Some(t), Some(r)) = (m.tasks.get(&w), runs.get_mut(&w)) else { return Follows::new() };
    if t.state() != TaskState::PendingArgsAvail {
        return Follows::new();
    }
    r.exec.unresolved = r.exec.unresolved.saturating_sub(1);
    if r.exec.unresolved == 0 {
        smallvec![Follow::TaskReady(w)]
    } else {
        Follows::new()
    }
}

/// The producer failed for good: the owner and the tasks waiting for it get its error
/// ([`Follow::ArgFailed`]), then it goes if nobody holds it.
pub(crate) fn object_failed(m: &mut Model, id: ObjectId) -> Follows {
    let Some(o) = m.objects.get_mut(&id) else { return Follows::new() };
    o.status = ObjectStatus::Failed;
    let waiters = std::mem::take(&mut o.waiters);
    let owner = o.owner_waits.then_some(Follow::FutureResolved(o.owner, true));
    readers_then_free(m, id, owner, waiters.into_iter().map(Follow::ArgFailed))
}

/// One of a waiting task's arguments failed: the task fails with it, if it still waits.
pub(crate) fn arg_failed(m: &Model, w: TaskId) -> Follows {
    if m.tasks.get(&w).is_some_and(|t| t.state() == TaskState::PendingArgsAvail) {
        smallvec![Follow::FailTask(w, ErrorType::TaskExecutionException, false)]
    } else {
        Follows::new()
    }
}

/// An object's readers (its owner first), then its free if nobody holds it
/// ([`Follow::FreeIfUnreferenced`]: the readers may drop or take references first); with
/// no reader, the free happens now.
fn readers_then_free(
    m: &mut Model,
    id: ObjectId,
    owner: Option<Follow>,
    waiters: impl ExactSizeIterator<Item = Follow>,
) -> Follows {
    let readers = usize::from(owner.is_some()) + waiters.len();
    if readers == 0 {
        PlasmaStores::free_if_unreferenced(m, id);
        return Follows::new();
    }
    let mut follows = Follows::with_capacity(readers + 1);
    // Pushed one by one: `extend`'s code for a mapped iterator was an instruction-cache
    // miss on every sealed return a task waits for.
    if let Some(owner) = owner {
        follows.push(owner);
    }
    for waiter in waiters {
        follows.push(waiter);
    }
    follows.push(Follow::FreeIfUnreferenced(id));
    follows
}

/// An object reference is dropped; the object goes with its last one.
pub(crate) fn unref_object(m: &mut Model, id: ObjectId) {
    if let Some(o) = m.objects.get_mut(&id) {
        o.refs = o.refs.saturating_sub(1);
    }
    PlasmaStores::free_if_unreferenced(m, id);
}

/// A put object is sealed: Flow Insight records the put, then the task holds the object.
pub(crate) fn put_sealed(
    cx: &mut Cx,
    flow: &mut FlowRecorder,
    tid: TaskId,
    attempt: u32,
    id: ObjectId,
    size: u64,
) -> Follows {
    flow.put(cx.model, cx.runs, tid, cx.now(), size);
    let running = cx.model.tasks.get(&tid).is_some_and(|t| t.attempt == attempt && t.state().is_running());
    if let Some(r) = cx.runs.get_mut(&tid).filter(|_| running) {
        r.exec.puts.push(id);
    }
    smallvec![Follow::HoldFutures(tid, attempt, vec![id])]
}

/// An object left without a copy: its producer runs again (lineage reconstruction) when
/// it is a normal task within its retry budget whose arguments and owner still exist;
/// otherwise the tasks waiting for it fail. An object nobody holds just goes.
pub(crate) fn reconstruct_or_fail(cx: &mut Cx, head: NodeIdx, id: ObjectId) -> Follows {
    let (m, runs, specs, now) = (&mut *cx.model, &mut *cx.runs, cx.specs, cx.clock.now);
    let o = &m.objects[&id];
    if o.refs == 0 {
        m.objects.remove(&id);
        return Follows::new();
    }
    let (spec_id, producer, owner, job) = (o.spec, o.producer.get(), o.owner, o.job);
    let args_alive = o.lineage_args.iter().all(|a| m.objects.contains_key(a));
    let budget = specs.get(spec_id as usize).map(|s| s.max_retries).unwrap_or(0);
    let can = producer.is_some()
        && args_alive
        && specs.get(spec_id as usize).is_some_and(|s| s.kind == TaskType::NormalTask)
        && (budget < 0 || o.reconstructions < budget as u32)
        && m.tasks.contains_key(&owner)
        && !m.tasks.contains_key(&producer.unwrap_or_default());
    if !can {
        log_event!(m.log, now, "object", "{:x} LOST unrecoverable", id.0);
        let o = m.objects.get_mut(&id).expect("object exists");
        let waiters = std::mem::take(&mut o.waiters);
        o.status = ObjectStatus::Failed;
        return waiters.into_iter().map(|w| Follow::FailTask(w, ErrorType::ObjectLost, false)).collect();
    }
    let producer = producer.expect("checked above");
    let o = m.objects.get_mut(&id).expect("object exists");
    o.reconstructions += 1;
    o.status = ObjectStatus::Pending;
    let attempt = o.producer_attempt + 1;
    let args = o.lineage_args.clone();
    let owner_waits = o.owner_waits;
    if owner_waits {
        if let Some(r) = runs.get_mut(&owner) {
            r.exec.unresolved += 1;
        }
    }
    for a in args.iter() {
        if let Some(ao) = m.objects.get_mut(a) {
            ao.refs += 1;
        }
    }
    m.counters.objects_reconstructed += 1;
    log_event!(m.log, now, "object", "{:x} RECONSTRUCTING producer={:x}", id.0, producer.0);
    let spec = &specs[spec_id as usize];
    let owner_node = m.tasks.get(&owner).and_then(|t| t.node.get()).unwrap_or(head);
    let mut task = Task::new(producer, job, spec.name, TaskType::NormalTask, spec_id, owner_node, now);
    task.attempt = attempt;
    task.parent = Some(owner).into();
    task.args = args;
    task.returns = id;
    runs.insert_task(m, task, Default::default());
    m.counters.tasks_retried += 1;
    let attempt = m.tasks[&producer].attempt;
    cx.clock.schedule_in(0, Event::Resubmit(producer, attempt));
    Follows::new()
}

/// Create the (pending) return object of a new task. The owner holds one reference.
pub(crate) fn new_return_object(
    cx: &mut Cx,
    producer: TaskId,
    owner: TaskId,
    job: JobId,
    spec: u32,
    size: u64,
    args: &ObjectList,
) -> ObjectId {
    let (m, cfg, now) = (&mut *cx.model, cx.cfg, cx.clock.now);
    let id = m.alloc_object_id();
    let inline = size <= cfg.object_store.inline_threshold.0;
    m.objects.insert(
        id,
        Object {
            job,
            owner,
            producer: Some(producer).into(),
            size,
            status: ObjectStatus::Pending,
            inline,
            primary: CompactOption::NONE,
            spilled: false,
            copies: Default::default(),
            refs: 1,
            // Set once the owner holds the future (`hold_futures`): a call that fails or
            // finishes while it is being submitted must not resolve a future the owner
            // has not counted yet.
            owner_waits: false,
            waiters: Default::default(),
            created_at: now,
            spec,
            lineage_args: if inline { ObjectList::EMPTY } else { args.clone() },
            reconstructions: 0,
            producer_attempt: 0,
        },
    );
    m.counters.objects_created += 1;
    id
}
