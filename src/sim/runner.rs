//! Serve mode: the engine on its own thread, virtual time paced to wall time × speed,
//! snapshots published through an `ArcSwap` (readers never lock the engine), control
//! requests and speed changes in over one channel with replies back on one-shot
//! channels. A speed change is the runner's own: it moves the pace, not the model.
//!
//! Pacing never accrues a debt: a speed change continues from where the engine
//! actually is (not from where the old pace said it should be), and an engine more
//! than [`MAX_LAG`] of wall time behind is let off the rest. Otherwise a pace the
//! engine cannot keep leaves it owing virtual time it catches up on for hours, one
//! core busy, whatever speed is set afterwards.

use super::control::{Control, ControlError, ControlOutcome};
use super::engine::Engine;
use super::publish::PublishOptions;
use crate::config::Config;
use crate::model::LoggedEvent;
use crate::snapshot::{Snapshot, Tables};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How serve mode runs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Publish a snapshot at least this often (wall time).
    pub publish_every: Duration,
    /// Rebuild the State API tables at most this often, and only while they are read.
    pub tables_every: Duration,
    /// Events of the GCS log copied into each snapshot.
    pub recent_events: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            publish_every: Duration::from_millis(100),
            tables_every: Duration::from_secs(1),
            recent_events: 1_000,
        }
    }
}

/// The most wall time the engine may trail its pace by; beyond, the pace is rebased
/// on where the engine is, and `rayscope_sim_lag_seconds` stays at about this.
pub const MAX_LAG: Duration = Duration::from_secs(2);

type Reply<T> = tokio::sync::oneshot::Sender<Result<T, ControlError>>;

/// What travels to the engine thread: a request for the engine, or a new pace.
enum Request {
    Control(Control, Reply<ControlOutcome>),
    SetSpeed(f64, Reply<()>),
}

/// A handle to the running engine, or to another producer of snapshots (observe
/// mode's, which takes no requests). Cheap to clone.
#[derive(Clone)]
pub struct EngineHandle {
    snapshot: Arc<ArcSwap<Snapshot>>,
    /// `Err(why)`: a producer that changes nothing refuses every request with this.
    tx: Result<mpsc::Sender<Request>, &'static str>,
    /// Wall-clock ms (since start) of the last State API read, so tables are built only when wanted.
    tables_wanted_at: Arc<AtomicU64>,
    started: Instant,
    stop: Arc<AtomicBool>,
    join: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl EngineHandle {
    /// Start the engine thread. The first snapshot is published before this returns.
    pub fn spawn(cfg: Config, opts: RunOptions) -> EngineHandle {
        let speed = cfg.sim.speed;
        let mut engine = Engine::new(cfg);
        let first = engine.publish(PublishOptions {
            speed,
            tables: Some(Arc::new(engine.build_tables())),
            recent: Arc::new(engine.recent_events(opts.recent_events)),
            ..PublishOptions::seq(0)
        });
        let snapshot = Arc::new(ArcSwap::from_pointee(first));
        let (tx, rx) = mpsc::channel::<Request>();
        let tables_wanted_at = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let shared = (snapshot.clone(), tables_wanted_at.clone(), stop.clone());
        let join = std::thread::Builder::new()
            .name("rayscope-engine".into())
            .spawn(move || run(&mut engine, speed, opts, rx, shared.0, shared.1, shared.2, started))
            .expect("spawn engine thread");
        EngineHandle {
            snapshot,
            tx: Ok(tx),
            tables_wanted_at,
            started,
            stop,
            join: Arc::new(std::sync::Mutex::new(Some(join))),
        }
    }

    /// A handle on snapshots another producer publishes into `snapshot` (its thread
    /// watches `stop`). Every control request and speed change is refused with
    /// `refusal` (a 409): nothing here can change what is observed.
    pub fn producer(
        snapshot: Arc<ArcSwap<Snapshot>>,
        stop: Arc<AtomicBool>,
        join: Option<JoinHandle<()>>,
        refusal: &'static str,
    ) -> EngineHandle {
        EngineHandle {
            snapshot,
            tx: Err(refusal),
            tables_wanted_at: Arc::new(AtomicU64::new(0)),
            started: Instant::now(),
            stop,
            join: Arc::new(std::sync::Mutex::new(join)),
        }
    }

    /// Whether this handle takes control requests (the model's engine does).
    pub fn controllable(&self) -> bool {
        self.tx.is_ok()
    }

    /// The latest snapshot (never blocks the engine).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Note that someone reads the State API tables, so the engine keeps them fresh.
    pub fn want_tables(&self) {
        self.tables_wanted_at.store(self.started.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
    }

    /// Send a control request and wait for the engine's answer.
    pub async fn control(&self, c: Control) -> Result<ControlOutcome, ControlError> {
        let tx = self.tx.as_ref().map_err(|why| ControlError::conflict(*why))?;
        let (reply, rx) = tokio::sync::oneshot::channel();
        tx.send(Request::Control(c, reply)).map_err(|_| ControlError::EngineStopped)?;
        rx.await.unwrap_or(Err(ControlError::EngineStopped))
    }

    /// Pace virtual time at `speed` virtual seconds per wall second from now on; refused
    /// (`Invalid`) unless positive and finite.
    pub async fn set_speed(&self, speed: f64) -> Result<(), ControlError> {
        let tx = self.tx.as_ref().map_err(|why| ControlError::conflict(*why))?;
        let (reply, rx) = tokio::sync::oneshot::channel();
        tx.send(Request::SetSpeed(speed, reply)).map_err(|_| ControlError::EngineStopped)?;
        rx.await.unwrap_or(Err(ControlError::EngineStopped))
    }

    /// Stop the engine thread and wait for it.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(j) = self.join.lock().ok().and_then(|mut g| g.take()) {
            let _ = j.join();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    engine: &mut Engine,
    mut speed: f64,
    opts: RunOptions,
    rx: mpsc::Receiver<Request>,
    out: Arc<ArcSwap<Snapshot>>,
    tables_wanted_at: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    started: Instant,
) {
    let mut wall_base = Instant::now();
    let mut virt_base = engine.now_us();
    let mut last_publish = Instant::now();
    let mut last_tables: Option<(Instant, Arc<Tables>)> = None;
    let mut seq = 1u64;
    let mut lag = 0.0f64;
    let mut recent: (u64, Arc<Vec<LoggedEvent>>) = (u64::MAX, Arc::new(Vec::new()));
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let target = virt_base + (wall_base.elapsed().as_secs_f64() * speed * 1e6) as u64;
        // Catch up in slices so snapshots keep flowing even when the engine falls behind.
        loop {
            match engine.next_event_time() {
                Some(t) if t <= target => {
                    for _ in 0..4096 {
                        match engine.next_event_time() {
                            Some(t) if t <= target => {
                                engine.step();
                            }
                            _ => break,
                        }
                    }
                    if last_publish.elapsed() >= opts.publish_every {
                        break;
                    }
                }
                _ => {
                    engine.run_until(target);
                    break;
                }
            }
        }
        let mut behind_us = engine.next_event_time().map(|t| target.saturating_sub(t)).unwrap_or(0);
        let max_behind_us = (MAX_LAG.as_secs_f64() * speed * 1e6) as u64;
        if behind_us > max_behind_us {
            // Let the engine off everything beyond MAX_LAG: from now on the pace counts
            // from MAX_LAG ahead of where the engine is.
            virt_base = engine.now_us().saturating_add(max_behind_us);
            wall_base = Instant::now();
            behind_us = max_behind_us;
        }
        lag = if speed > 0.0 { behind_us as f64 / 1e6 / speed } else { lag };
        if last_publish.elapsed() >= opts.publish_every {
            let want = tables_wanted_at.load(Ordering::Relaxed);
            let wanted_recently = want > 0 && started.elapsed().as_millis() as u64 <= want + 10_000;
            let tables = match &last_tables {
                Some((at, t)) if at.elapsed() < opts.tables_every || !wanted_recently => Some(t.clone()),
                _ if wanted_recently || last_tables.is_none() => {
                    let t = Arc::new(engine.build_tables());
                    last_tables = Some((Instant::now(), t.clone()));
                    Some(t)
                }
                _ => None,
            };
            if recent.0 != engine.model.log.total() {
                recent = (engine.model.log.total(), Arc::new(engine.recent_events(opts.recent_events)));
            }
            let mut snap =
                engine.publish(PublishOptions { seq, speed, lag_seconds: lag, tables, recent: recent.1.clone() });
            snap.published_at = Some(Instant::now());
            out.store(Arc::new(snap));
            seq += 1;
            last_publish = Instant::now();
        }
        // Sleep until the next event is due, a snapshot is due, or a request arrives.
        let until_publish = opts.publish_every.saturating_sub(last_publish.elapsed());
        let until_event = match (engine.next_event_time(), speed > 0.0) {
            (Some(t), true) => {
                let virt_now = virt_base + (wall_base.elapsed().as_secs_f64() * speed * 1e6) as u64;
                Duration::from_micros(((t.saturating_sub(virt_now)) as f64 / speed) as u64)
            }
            _ => Duration::from_millis(50),
        };
        let wait = until_publish.min(until_event).min(Duration::from_millis(50));
        match rx.recv_timeout(wait) {
            Ok(request) => {
                let mut pending = vec![request];
                while let Ok(more) = rx.try_recv() {
                    pending.push(more);
                }
                for request in pending {
                    match request {
                        Request::Control(c, reply) => {
                            let _ = reply.send(engine.apply(c));
                        }
                        Request::SetSpeed(s, reply) => {
                            let result = if !(s.is_finite() && s > 0.0) {
                                Err(ControlError::invalid(format!("speed must be a positive number, got {s}")))
                            } else {
                                // Continue at the new pace from where the engine is: the
                                // pace's target if it kept up, else its own clock (no debt).
                                let target = virt_base + (wall_base.elapsed().as_secs_f64() * speed * 1e6) as u64;
                                let caught_up = engine.next_event_time().is_none_or(|t| t > target);
                                virt_base = if caught_up { target } else { engine.now_us().min(target) };
                                wall_base = Instant::now();
                                speed = s;
                                Ok(())
                            };
                            let _ = reply.send(result);
                        }
                    }
                }
                // Make the change visible at once.
                last_publish = Instant::now() - opts.publish_every;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(wait);
            }
        }
    }
}
