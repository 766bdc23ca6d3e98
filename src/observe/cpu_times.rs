//! Ray's worker processes' CPU time, read on the observer's own machine.
//!
//! A task row says when a call ran, not whether it computed or slept: a replay that
//! only holds each call's time runs a computing function as if it had a core to
//! itself. The kernel keeps each process's CPU time (`/proc/<pid>/stat`, what Ray's
//! reporter reads as `cpu_times`), so an observer beside the workers reads it a few
//! times a second, and `calibrate` divides it among the calls that ran
//! (`calibrate::bodies`).
//!
//! Owns: reading a process's CPU time, telling a Ray worker from any other process
//! (its title, which Ray sets to `ray::...`, and its start time, so a reused pid is
//! never taken for the worker), telling the observed node's worker from another
//! cluster's or another node's that holds the same pid here (the raylet that started
//! it names its node), telling a node on this machine from one on another host (its
//! address), the readings kept (bounded), and their trace record.
//! Must never: read a process that is not a Ray worker of the node named, hold more than
//! [`MAX_READINGS`] readings, or cost the observer more than a few hundred reads a
//! round ([`MAX_PIDS_A_ROUND`]).

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How often the workers' CPU time is read: a call of 100 ms or more spans readings.
pub const READ_EVERY: Duration = Duration::from_millis(100);

/// A process whose CPU time does not move is written again this often (ms): a resting
/// worker's time moves a clock tick (10 ms) now and then, and an interval between its
/// readings would otherwise span many calls, which leaves the fit few intervals.
pub const WRITE_AT_LEAST_EVERY_MS: u64 = 500;

/// Processes read a round at most (a node of 64 CPUs has 64 task workers and a few
/// actors'). Past it, each round goes on after the last pid the round before read, so
/// every process is read, less often.
pub const MAX_PIDS_A_ROUND: usize = 512;

/// Readings kept, every process together: at 10 a second for 16 workers, 50 minutes.
pub const MAX_READINGS: usize = 500_000;

/// How often this machine's interface addresses are read again: an address added while
/// the observer runs (a new interface, a DHCP lease) counts as this machine's from then.
pub const REREAD_ADDRESSES_EVERY: Duration = Duration::from_secs(60);

/// One round of readings: the worker processes whose CPU time moved since it was last
/// written, or was last written [`WRITE_AT_LEAST_EVERY_MS`] ago.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerCpu {
    /// When they were read, Unix ms.
    pub at_ms: u64,
    /// Each process's pid and its CPU time so far (user and system, every thread), ms.
    pub cpu_ms: Vec<(u32, u64)>,
}

/// One process's reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    pub at_ms: u64,
    pub pid: u32,
    pub cpu_ms: u64,
}

/// The readings kept, oldest first; past [`MAX_READINGS`] the oldest go.
#[derive(Debug, Default)]
pub struct CpuReadings {
    readings: VecDeque<Reading>,
    /// Readings dropped for the cap.
    pub dropped: u64,
}

impl CpuReadings {
    /// Keep a round's readings: whether any was new.
    pub fn apply(&mut self, round: &WorkerCpu) -> bool {
        for &(pid, cpu_ms) in &round.cpu_ms {
            if self.readings.len() >= MAX_READINGS {
                self.readings.pop_front();
                self.dropped += 1;
            }
            self.readings.push_back(Reading { at_ms: round.at_ms, pid, cpu_ms });
        }
        !round.cpu_ms.is_empty()
    }

    /// Each process's readings in time order.
    pub fn by_pid(&self) -> FxHashMap<u32, Vec<Reading>> {
        let mut out: FxHashMap<u32, Vec<Reading>> = FxHashMap::default();
        for r in &self.readings {
            out.entry(r.pid).or_default().push(*r);
        }
        for list in out.values_mut() {
            list.sort_by_key(|r| r.at_ms);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.readings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.readings.is_empty()
    }
}

/// A process being read: its start time (so a reused pid is told apart), and its last
/// CPU time written and when.
#[derive(Clone, Copy, Debug)]
struct Followed {
    started: u64,
    cpu_ms: u64,
    written_at_ms: u64,
}

/// The observer's reader of worker CPU times, one per observed cluster.
#[derive(Debug)]
pub struct CpuSampler {
    followed: FxHashMap<u32, Followed>,
    /// Pids of processes that had ended when read: the worker table keeps its dead
    /// workers, and they are not looked for again.
    gone: rustc_hash::FxHashSet<u32>,
    next: Instant,
    ms_per_tick: f64,
    /// The last pid a round read when it stopped at [`MAX_PIDS_A_ROUND`].
    resume_after: Option<u32>,
    /// This machine's own addresses, read every [`REREAD_ADDRESSES_EVERY`]; None where
    /// they could not be read (every node is then taken for this machine's, as where no
    /// address is told).
    local_ips: Option<Vec<IpAddr>>,
    local_ips_read_at: Instant,
    /// Addresses the user named as this machine's though no interface shows them
    /// (`observe --local-node-ip`: a NAT'ed or public `--node-ip-address`).
    named_local_ips: Vec<IpAddr>,
}

impl Default for CpuSampler {
    fn default() -> Self {
        CpuSampler::with_local_node_ips(Vec::new())
    }
}

/// Every address of this machine's interfaces, if they can be read.
fn local_ips() -> Option<Vec<IpAddr>> {
    let networks = sysinfo::Networks::new_with_refreshed_list().ok()?;
    Some(networks.values().flat_map(|n| n.ip_networks().iter().map(|net| net.addr)).collect())
}

impl CpuSampler {
    /// A sampler that also takes the nodes at `named` for this machine's, beside the
    /// addresses its interfaces show.
    pub fn with_local_node_ips(named: Vec<IpAddr>) -> Self {
        // SAFETY: sysconf reads a constant of the running kernel.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        CpuSampler {
            followed: FxHashMap::default(),
            gone: Default::default(),
            next: Instant::now(),
            ms_per_tick: if ticks > 0 { 1000.0 / ticks as f64 } else { 10.0 },
            resume_after: None,
            local_ips: local_ips(),
            local_ips_read_at: Instant::now(),
            named_local_ips: named,
        }
    }

    /// Read this machine's addresses again if they were last read
    /// [`REREAD_ADDRESSES_EVERY`] ago (or longer).
    pub fn refresh_local_ips(&mut self) {
        if self.local_ips_read_at.elapsed() >= REREAD_ADDRESSES_EVERY {
            self.local_ips = local_ips();
            self.local_ips_read_at = Instant::now();
        }
    }

    /// Whether the node at `ip` (Ray's `node_ip`) runs on this machine: a loopback
    /// address (`ray.cluster_utils.Cluster` gives each node one), one of this machine's
    /// own or named as such, or one that cannot be told (none given, or this machine's
    /// unread).
    pub fn on_this_machine(&self, ip: &str) -> bool {
        let Ok(ip) = ip.parse::<IpAddr>() else { return true };
        let Some(own) = &self.local_ips else { return true };
        ip.is_loopback() || ip.is_unspecified() || own.contains(&ip) || self.named_local_ips.contains(&ip)
    }

    /// Whether a round is due.
    pub fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Read the CPU time of those of `workers` (pid → the node Ray lists it on, hex; ""
    /// where no node is known) that are Ray workers of that node on this machine: the
    /// round's readings of the processes whose time moved or is due to be written again,
    /// or `None` if there are none.
    pub fn round(&mut self, workers: &BTreeMap<u32, String>, at_ms: u64) -> Option<WorkerCpu> {
        self.next = Instant::now() + READ_EVERY;
        let pids = in_turn(workers.keys().copied(), self.resume_after.take());
        let mut out = Vec::new();
        let mut seen = 0;
        for pid in pids {
            if seen == MAX_PIDS_A_ROUND {
                break;
            }
            if self.gone.contains(&pid) {
                continue;
            }
            seen += 1;
            if seen == MAX_PIDS_A_ROUND {
                self.resume_after = Some(pid);
            }
            let Some((started, ticks)) = read_stat(pid) else {
                self.followed.remove(&pid);
                if self.gone.len() >= 16 * MAX_PIDS_A_ROUND {
                    self.gone.clear();
                }
                self.gone.insert(pid);
                continue;
            };
            let cpu_ms = (ticks as f64 * self.ms_per_tick).round() as u64;
            match self.followed.get_mut(&pid) {
                Some(f) if f.started == started => {
                    if f.cpu_ms != cpu_ms || at_ms >= f.written_at_ms + WRITE_AT_LEAST_EVERY_MS {
                        *f = Followed { started, cpu_ms, written_at_ms: at_ms };
                        out.push((pid, cpu_ms));
                    }
                }
                // Asked again each round: a process takes Ray's title only once it runs.
                _ if is_ray_worker(pid) && started_by_node(pid, &workers[&pid]) => {
                    self.followed.insert(pid, Followed { started, cpu_ms, written_at_ms: at_ms });
                    out.push((pid, cpu_ms));
                }
                _ => {
                    self.followed.remove(&pid);
                }
            }
        }
        (!out.is_empty()).then_some(WorkerCpu { at_ms, cpu_ms: out })
    }
}

/// `pids` sorted, each once, starting after `after` and wrapping round.
fn in_turn(pids: impl IntoIterator<Item = u32>, after: Option<u32>) -> Vec<u32> {
    let mut pids: Vec<u32> = pids.into_iter().collect();
    pids.sort_unstable();
    pids.dedup();
    if let Some(last) = after {
        let from = pids.partition_point(|&p| p <= last);
        pids.rotate_left(from);
    }
    pids
}

/// A process's start time and CPU ticks (user and system), from `/proc/<pid>/stat`.
fn read_stat(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// After the command's closing parenthesis (a title may hold spaces and parentheses),
/// fields 14 and 15 are utime and stime, field 22 the start time (proc(5)).
fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some((field(22)?, field(14)? + field(15)?))
}

/// Ray titles its worker processes `ray::IDLE`, `ray::<function>`, `ray::<Class>`.
pub fn is_ray_worker(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"ray::"))
}

/// Whether the process `pid` here is the worker Ray lists on `node`: its parent, the
/// raylet that started it, names its node (`--node_id=<hex>`, Ray 2.60's raylet). A pid
/// listed on another host, or a worker of another cluster on this machine, has the
/// same number here under another raylet. True where `node` is unknown or the parent
/// names no node (nothing to tell them apart by).
fn started_by_node(pid: u32, node: &str) -> bool {
    if node.is_empty() {
        return true;
    }
    let Some(parent) = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| parent_in_stat(&t))
    else {
        return false;
    };
    std::fs::read(format!("/proc/{parent}/cmdline")).is_ok_and(|c| names_node(&c, node))
}

/// The parent pid in a `/proc/<pid>/stat` line: field 4, after the title.
fn parent_in_stat(text: &str) -> Option<u32> {
    text[text.rfind(')')? + 1..].split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Whether a command line (NUL-separated) that names a node (`--node_id=`) names `node`;
/// true where it names none.
fn names_node(cmdline: &[u8], node: &str) -> bool {
    let named = cmdline.split(|&b| b == 0).find_map(|arg| arg.strip_prefix(b"--node_id="));
    named.is_none_or(|id| id.eq_ignore_ascii_case(node.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_start_and_its_user_and_system_ticks_whatever_its_title_holds() {
        let line = "4242 (ray::a (b) c) S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 9 0 777 1000 10 rest";
        assert_eq!(parse_stat(line), Some((777, 175)));
        assert_eq!(parse_stat("4242 (x) S 1"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    /// Pids on no known node.
    fn anywhere(pids: impl IntoIterator<Item = u32>) -> BTreeMap<u32, String> {
        pids.into_iter().map(|p| (p, String::new())).collect()
    }

    #[test]
    fn a_process_not_titled_as_a_ray_worker_is_not_read() {
        // This test's own process is no Ray worker.
        let mut s = CpuSampler::default();
        assert_eq!(s.round(&anywhere([std::process::id()]), 1), None);
        assert_eq!(s.round(&anywhere([u32::MAX - 1]), 2), None, "a pid that is no process");
    }

    #[test]
    fn a_process_titled_as_a_ray_worker_is_read_as_its_cpu_time_moves() {
        // `exec -a` gives the busy loop the title Ray gives its workers.
        let mut child = std::process::Command::new("bash")
            .args(["-c", "exec -a ray::burn bash -c 'while :; do :; done'"])
            .spawn()
            .expect("bash runs");
        let pid = child.id();
        let mut s = CpuSampler::default();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while Instant::now() < deadline && seen.last().is_none_or(|&ms| ms < 50) {
            if let Some(round) = s.round(&anywhere([pid]), seen.len() as u64) {
                assert_eq!(round.cpu_ms.len(), 1);
                assert_eq!(round.cpu_ms[0].0, pid);
                seen.push(round.cpu_ms[0].1);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen.last().is_some_and(|&ms| ms >= 50), "its CPU time moved: {seen:?}");
        // The rounds are 1 ms apart on the clock passed: none is due to be written again.
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "a round writes only a time that moved: {seen:?}");
        assert_eq!(s.round(&anywhere([pid]), 99), None, "an ended process is not read");
    }

    #[test]
    fn a_resting_worker_is_written_again_every_so_often_though_its_time_does_not_move() {
        let mut child =
            std::process::Command::new("bash").args(["-c", "exec -a ray::nap sleep 60"]).spawn().expect("bash runs");
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_ray_worker(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut s = CpuSampler::default();
        let first = s.round(&anywhere([pid]), 1_000);
        let soon = s.round(&anywhere([pid]), 1_000 + WRITE_AT_LEAST_EVERY_MS - 1);
        let later = s.round(&anywhere([pid]), 1_000 + WRITE_AT_LEAST_EVERY_MS);
        let _ = child.kill();
        let _ = child.wait();
        let first = first.expect("a first sight is written");
        assert_eq!(soon, None, "a time that did not move is not written again at once");
        let later = later.expect("written again once due");
        assert_eq!((later.at_ms, later.cpu_ms), (1_000 + WRITE_AT_LEAST_EVERY_MS, first.cpu_ms));
    }

    #[test]
    fn a_worker_is_read_only_as_the_node_its_raylet_names() {
        // A "raylet" that names its node starts a process titled as Ray's workers, and
        // says its pid.
        let mut raylet = std::process::Command::new("bash")
            .args(["-c", "exec -a ray::burn sleep 60 & echo $!; wait", "raylet", "--node_id=AB12"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("bash runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(raylet.stdout.take().unwrap()), &mut line).unwrap();
        let worker: u32 = line.trim().parse().expect("the worker's pid");
        // The pid is said before the forked shell has become the titled process.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_ray_worker(worker) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let on = |node: &str| [(worker, node.to_string())].into_iter().collect::<BTreeMap<_, _>>();
        // Its CPU time may not move: a first sight is read whatever it is.
        let read_on = |node: &str| CpuSampler::default().round(&on(node), 1).is_some();
        let (this_node, other_node, unknown) = (read_on("ab12"), read_on("cd34"), read_on(""));
        // SAFETY: kill(2) on a pid this test started.
        unsafe { libc::kill(worker as i32, libc::SIGKILL) };
        let _ = raylet.wait();
        assert!(this_node, "the worker of the node its raylet names is read");
        assert!(!other_node, "a pid listed on another node is another process here");
        assert!(unknown, "a pid on no known node is read as before");
        assert!(names_node(b"raylet\0--node_manager_port=0\0", "cd34"), "a raylet that names no node");
        assert_eq!(parent_in_stat("42 (ray::a) b) S 17 42 42 0"), Some(17));
    }

    #[test]
    fn a_node_is_on_this_machine_at_a_loopback_or_an_own_address_or_where_none_is_told() {
        let s = CpuSampler::default();
        assert!(s.on_this_machine("127.0.0.3"), "a local cluster's node");
        assert!(s.on_this_machine("::1"));
        assert!(s.on_this_machine(""), "no address: nothing to tell by");
        let own = local_ips().expect("this machine's interfaces are read");
        for ip in &own {
            assert!(s.on_this_machine(&ip.to_string()), "{ip} is this machine's");
        }
        // Documentation addresses: one of them is no interface here.
        let elsewhere = ["203.0.113.77", "198.51.100.77", "192.0.2.77"]
            .into_iter()
            .find(|a| !own.contains(&a.parse().unwrap()))
            .expect("not all three are this machine's");
        assert!(!s.on_this_machine(elsewhere), "{elsewhere} is another host's");
        // Addresses read before an interface came up are read again once they are due.
        let mut stale = CpuSampler { local_ips: Some(Vec::new()), ..CpuSampler::default() };
        let an_own = own.iter().find(|ip| !ip.is_loopback()).map(|ip| ip.to_string());
        let long_ago = Instant::now().checked_sub(REREAD_ADDRESSES_EVERY);
        if let (Some(ip), Some(long_ago)) = (&an_own, long_ago) {
            assert!(!stale.on_this_machine(ip), "not among the addresses read");
            stale.refresh_local_ips();
            assert!(!stale.on_this_machine(ip), "read again only when due");
            stale.local_ips_read_at = long_ago;
            stale.refresh_local_ips();
            assert!(stale.on_this_machine(ip), "{ip} is found once the addresses are read again");
        }
        let named = CpuSampler::with_local_node_ips(vec![elsewhere.parse().unwrap()]);
        assert!(named.on_this_machine(elsewhere), "{elsewhere}, named as this machine's, is");
        assert!(!named.on_this_machine("2001:db8::77"), "an address not named is still another host's");
    }

    #[test]
    fn past_the_rounds_cap_the_next_round_goes_on_where_it_stopped() {
        // Pids that are no process are read (and found gone) once each, in turn.
        let mut s = CpuSampler::default();
        let pids: Vec<u32> = (0..MAX_PIDS_A_ROUND as u32 + 10).map(|k| u32::MAX - 1 - k).collect();
        s.round(&anywhere(pids.iter().copied()), 1);
        assert_eq!(s.gone.len(), MAX_PIDS_A_ROUND);
        let lowest = u32::MAX - 1 - (MAX_PIDS_A_ROUND as u32 + 9);
        assert_eq!(s.resume_after, Some(lowest + MAX_PIDS_A_ROUND as u32 - 1), "it stopped at its 512th pid");
        s.round(&anywhere(pids.iter().copied()), 2);
        assert_eq!(s.gone.len(), pids.len(), "the second round read the 10 the first left");
        assert_eq!(in_turn([4, 1, 3, 2, 3], Some(2)), vec![3, 4, 1, 2]);
        assert_eq!(in_turn([4, 1, 3], None), vec![1, 3, 4]);
        assert_eq!(in_turn([4, 1, 3], Some(9)), vec![1, 3, 4]);
    }

    #[test]
    fn readings_are_kept_by_process_in_time_order_and_bounded() {
        let mut r = CpuReadings::default();
        assert!(!r.apply(&WorkerCpu { at_ms: 5, cpu_ms: vec![] }));
        assert!(r.apply(&WorkerCpu { at_ms: 20, cpu_ms: vec![(7, 30), (8, 1)] }));
        assert!(r.apply(&WorkerCpu { at_ms: 10, cpu_ms: vec![(7, 10)] }));
        let by = r.by_pid();
        assert_eq!(by[&7].iter().map(|x| (x.at_ms, x.cpu_ms)).collect::<Vec<_>>(), vec![(10, 10), (20, 30)]);
        for i in 0..MAX_READINGS as u64 {
            r.apply(&WorkerCpu { at_ms: 100 + i, cpu_ms: vec![(9, i)] });
        }
        assert_eq!((r.len(), r.dropped), (MAX_READINGS, 3));
    }
}
