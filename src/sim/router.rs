//! The router: the one place a follow-up is handed to the component that owns it.
//!
//! Owns: the order follow-ups run in (depth first, before the next event) and the stack
//! that holds them. Must never: decide anything itself (each arm hands the request to
//! the component that owns it), or defer a follow-up to a later event (that would
//! reorder the log). It stands above every component: they return [`Follow`] values
//! and never call it.

use super::autoscaler::Autoscaler;
use super::core_worker::{futures, retries, tasks};
use super::engine::Engine;
use super::faults::FaultState;
use super::follow::{cx, Follow, Follows};
use super::gcs::actors::ActorManager;
use super::gcs::jobs::JobManager;
use super::gcs::placement_groups::PlacementGroupManager;
use super::objects::{self, PlasmaStores};
use super::raylet::cluster_queues::ClusterQueues;
use super::raylet::task_run;
use smallvec::smallvec;

impl Engine {
    /// Run one follow-up, and whatever it asks next, before returning.
    pub(crate) fn follow(&mut self, f: Follow) {
        self.follow_all(smallvec![f]);
    }

    /// Run follow-ups in order, depth first: each one's own follow-ups run before the
    /// next one, as the nested calls they stand for would have. An explicit stack rather
    /// than recursion, so a long chain of continuations cannot exhaust the thread's
    /// stack. The engine keeps it: a follow-up that runs the interpreter (which calls
    /// this again) pushes above `base` and drains back to it before this goes on.
    pub(crate) fn follow_all(&mut self, mut follows: Follows) {
        let base = self.follow_stack.len();
        // Most lists hold one follow-up or none (an event's step, a component's one
        // request), and most follow-ups ask for one more or none: a chain of those runs
        // without the stack, and only the rest of a longer list goes on it.
        let mut f = match follows.len() {
            0 => {
                forget_if_inline(follows);
                return;
            }
            1 => {
                let only = follows.pop().expect("one follow-up");
                forget_if_inline(follows);
                only
            }
            _ => {
                push_follows(&mut self.follow_stack, follows);
                self.follow_stack.pop().expect("just pushed")
            }
        };
        loop {
            let mut next = self.route(f);
            f = match next.len() {
                0 => {
                    forget_if_inline(next);
                    if self.follow_stack.len() == base {
                        return;
                    }
                    self.follow_stack.pop().expect("the stack is above its base")
                }
                1 => {
                    let only = next.pop().expect("one follow-up");
                    forget_if_inline(next);
                    only
                }
                _ => {
                    push_follows(&mut self.follow_stack, next);
                    self.follow_stack.pop().expect("just pushed")
                }
            };
        }
    }

    /// The component that owns a follow-up takes it and says what follows.
    #[inline(never)]
    fn route(&mut self, f: Follow) -> Follows {
        match f {
            Follow::FailTask(t, err, retry) => retries::fail(cx!(self), &mut self.queues, t, err, retry),
            Follow::FailTaskReleased(t, err, retry) => retries::fail_released(cx!(self), &mut self.flow, t, err, retry),
            Follow::ActorDied(a, cause, restart) => self.actor_manager.died(cx!(self), a, cause, restart),
            Follow::ActorDiedReleased(dying) => ActorManager::died_released(&self.model, dying),
            Follow::ActorDiedAnnounced(dying) => ActorManager::died_announced(cx!(self), *dying),
            Follow::RestartActor(a) => ActorManager::restart(cx!(self), self.node_manager.head(), a),
            Follow::ActorCreationSubmitted(a, t, ret) => ActorManager::creation_submitted(&mut self.model, a, t, ret),
            Follow::ActorCreated(a, n, holds) => self.actor_manager.on_created(cx!(self), a, n, holds),
            Follow::EnqueueActorTask(t) => ActorManager::enqueue(cx!(self), t),
            Follow::PumpActor(a) => self.actor_manager.pump(cx!(self), &mut self.plasma, a),
            Follow::EndJob(j, status, message) => self.jobs.end(cx!(self), j, status, &message),
            Follow::EndJobTasks(j) => JobManager::end_tasks(&self.model, j),
            Follow::EndJobGroups(j) => JobManager::end_groups(&self.model, j),
            Follow::NextArrival(m) => {
                self.jobs.next_arrival(cx!(self), m);
                Follows::new()
            }
            Follow::CrashNode(n, reason) => self.faults.crash_node(cx!(self), n, reason),
            Follow::KillNode(n, reason, failure) => {
                FaultState::kill_node(cx!(self), &mut self.autoscaler, n, reason, failure)
            }
            Follow::FailLeaseOnDeadNode(t) => FaultState::fail_lease_on_dead_node(&mut self.model, t),
            Follow::KillActorsOnDeadNode(n) => {
                FaultState::kill_actors_on_dead_node(cx!(self), &mut self.actor_manager, n)
            }
            Follow::KillActorOnDeadNode(a) => ActorManager::kill_on_dead_node(&mut self.model, a),
            Follow::RequeueStrandedBy(n) => FaultState::requeue_stranded_by(cx!(self), &mut self.queues, n),
            Follow::EmptyDeadStore(n) => FaultState::empty_dead_store(&mut self.model, n),
            Follow::ForgetDeadNode(n) => {
                FaultState::forget_dead_node(&mut self.raylets, &mut self.plasma, &mut self.node_manager, n);
                self.cpus.lost(n);
                self.queues.gc.lost(n);
                Follows::new()
            }
            Follow::RestoreNode(ip) => {
                if let Some(n) = self.node_manager.alive_at(&self.model, &ip) {
                    self.faults.restore_after_death(&mut self.model, n, self.clock.now);
                    return Follows::new();
                }
                if let Some(node_type) = self.node_manager.returning_type(&self.model, &self.cfg.cluster, &ip) {
                    self.add_node(node_type, ip);
                }
                Follows::new()
            }
            Follow::CheckMemory(n) => self.faults.check_memory(cx!(self), &self.actor_manager, n),
            Follow::RecheckMemory(n) => {
                self.faults.recheck_memory(cx!(self), n);
                Follows::new()
            }
            Follow::TerminateIdleNode(n) => Autoscaler::terminate_idle_node(cx!(self), n),
            Follow::NextAutoscalerTick => {
                Autoscaler::schedule_next_tick(cx!(self), &self.jobs, &self.queues);
                Follows::new()
            }
            Follow::LaunchNode(t) => {
                let launched = self.launch_node_of_type(t);
                self.autoscaler.launch_done(cx!(self), t, launched.is_some());
                Follows::new()
            }
            Follow::LoseObjectsOn(n) => self.plasma.lose_objects_on(cx!(self), &self.actor_manager, n),
            Follow::SealObject(o, n) => self.plasma.seal(cx!(self), &self.actor_manager, o, n),
            Follow::ObjectFailed(o) => objects::object_failed(&mut self.model, o),
            Follow::WakeReaders(o) => objects::wake_readers(&mut self.model, o),
            Follow::ArgReady(t) => objects::arg_ready(&self.model, &mut self.runs, t),
            Follow::ArgFailed(t) => objects::arg_failed(&self.model, t),
            Follow::FreeIfUnreferenced(o) => {
                PlasmaStores::free_if_unreferenced(&mut self.model, o);
                Follows::new()
            }
            Follow::GoOnPulling(fetch) => self.plasma.go_on_pulling(cx!(self), &self.actor_manager, *fetch),
            Follow::PutSealed(t, attempt, o, size) => {
                objects::put_sealed(cx!(self), &mut self.flow, t, attempt, o, size)
            }
            Follow::ReconstructOrFail(o) => objects::reconstruct_or_fail(cx!(self), self.node_manager.head(), o),
            Follow::HoldFutures(t, attempt, returns) => {
                futures::hold_futures(&mut self.model, &mut self.runs, t, attempt, returns)
            }
            Follow::FutureResolved(t, failed) => futures::future_resolved(cx!(self), t, failed),
            Follow::TaskReady(t) => tasks::task_ready(cx!(self), t),
            Follow::TrySchedule(t) => self.queues.try_schedule(cx!(self), &self.node_manager, t),
            Follow::TryScheduleInBundle(t, pg, b) => {
                PlacementGroupManager::try_schedule_in_bundle(cx!(self), &mut self.queues, t, pg, b)
            }
            Follow::ReleaseTaskRefs(t, args_too) => {
                tasks::release_refs(&mut self.model, &mut self.runs, t, args_too);
                Follows::new()
            }
            Follow::ResourcesFreed(n) => ClusterQueues::resources_freed(cx!(self), n),
            Follow::ResumeGetters(n) => self.queues.resume_next(cx!(self), self.pg_manager.has_pending(), n),
            Follow::ServeWaiting(n) => {
                self.queues.serve_waiting(cx!(self), n);
                Follows::new()
            }
            Follow::WakeNewestNode => self.queues.wake_newest_node(&self.model),
            Follow::ReturnToBundle(pg, b, req) => {
                PlacementGroupManager::return_to_bundle(&mut self.model, &mut self.queues, pg, b, &req)
            }
            Follow::RetryPendingPgs => self.pg_manager.retry_pending(cx!(self)),
            Follow::RetryPendingPgsIfAny => {
                if self.pg_manager.has_pending() {
                    smallvec![Follow::RetryPendingPgs]
                } else {
                    Follows::new()
                }
            }
            Follow::RemovePlacementGroup(pg) => self.pg_manager.remove(cx!(self), &mut self.queues, pg),
            Follow::ReschedulePgsOn(n) => self.pg_manager.reschedule_on(cx!(self), n),
            Follow::RetryPgs(ids) => self.pg_manager.retry(cx!(self), ids),
            Follow::ReschedulePgs(n, ids) => self.pg_manager.reschedule(cx!(self), n, ids),
            Follow::DrainBundleWaiters(pg) => PlacementGroupManager::drain_bundle_waiters(&mut self.queues, pg),
            Follow::WakeBundleWaiter(t) => PlacementGroupManager::wake_bundle_waiter(&self.model, t),
            Follow::RunProgram(t) => {
                self.run_program(t);
                Follows::new()
            }
            Follow::StartTask(t, n) => task_run::start(cx!(self), &mut self.flow, t, n),
            Follow::BeginRun(t, n) => task_run::begin_run(cx!(self), &mut self.flow, t, n),
            Follow::RewaitArgs(t, missing) => {
                task_run::rewait_args(cx!(self), t, missing);
                Follows::new()
            }
            Follow::FinishTask(t) => task_run::finish(cx!(self), &mut self.flow, t),
            Follow::ReuseOrReleaseLease(t) => self.queues.reuse_or_release_lease(cx!(self), t),
            Follow::FinishReleased(t) => task_run::finish_released(cx!(self), &mut self.flow, t),
        }
    }
}

/// Let an emptied list go without its drop: one held inline has nothing to free, and
/// its drop is a call on every follow-up's path (1.3 % of an event's instructions).
#[inline]
fn forget_if_inline(follows: Follows) {
    debug_assert!(follows.is_empty(), "only an emptied list is let go");
    if follows.spilled() {
        drop(follows);
    } else {
        std::mem::forget(follows);
    }
}

/// Put follow-ups on the stack so that the first comes off first. Popping the list
/// rather than iterating it: a list's iterator moves the whole inline buffer.
fn push_follows(stack: &mut Vec<Follow>, mut follows: Follows) {
    stack.reserve(follows.len());
    while let Some(f) = follows.pop() {
        stack.push(f);
    }
}
