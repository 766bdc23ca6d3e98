//! Bringing what the engine's next steps read into cache while it handles this one.
//!
//! At scale.yaml's size a task's record is cold by its next event (its `OpDone` comes
//! thousands of events after its `Begin`, and some 600k tasks wait at the peak), and so
//! are its return object and its node's records (2,000 nodes share the cache); those
//! misses, each waited for in turn, were the largest costs of handling an event. So
//! each event asks for them ahead, in two stages: the next event's task and run (a
//! guess from the event queue, which the task's own step cannot yet read), and this
//! event's return object and node records (its task, asked for one event ago, is in
//! cache now), all at once rather than one after another. Records, not the buffers
//! their vectors point at: reading a cold record for the pointer stalled as long as the
//! hint saved (alternating runs of scale.yaml, BENCHMARKS.md). Two buffers are the
//! exceptions, each behind a small array of per-node headers that stays warm: a
//! raylet's leases and the end of its plasma store's spill queue.
//!
//! Owns: nothing. Must never: change anything, or decide anything from what it reads:
//! a hint only changes the speed, never the event log.

use super::clock::Event;
use super::engine::Engine;

impl Engine {
    /// Ask for the records `ev` (now being handled) and the next event will read.
    #[inline]
    pub(super) fn prefetch_ahead(&self, ev: &Event) {
        if let Some(next) = self.clock.likely_next().and_then(Event::task) {
            self.model.tasks.prefetch(&next);
            self.runs.prefetch(&next);
        }
        let Some(t) = ev.task().and_then(|tid| self.model.tasks.get(&tid)) else { return };
        self.model.objects.prefetch(&t.returns);
        if let Some(n) = t.node.get() {
            if let Some(node) = self.model.nodes().get(n.index()) {
                node.prefetch();
            }
            self.raylets.prefetch(n);
            self.cpus.prefetch(n);
            self.model.task_counts.prefetch_running(n);
            self.plasma.prefetch_next_primary(n);
        }
    }
}
