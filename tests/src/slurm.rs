//! A real Slurm cluster for a test: `munged`, `slurmctld` and one `slurmd` per node, each node in
//! a network namespace of its own, all of it in a temporary directory of the cluster's own.
//!
//! ```text
//!   root namespace                          node namespaces
//!   slurmctld ─┐                            ┌─ bosun-slurm<S>-node1: eth0 10.213.<S>.11 ── slurmd -N node1
//!   munged     ├─ bridge bsl<S>br ──veth────┼─ bosun-slurm<S>-node2: eth0 10.213.<S>.12 ── slurmd -N node2
//!   the test   ┘  10.213.<S>.1              └─ …
//! ```
//!
//! Each cluster takes a *slot* `S` (0..64): an exclusive lock on `/tmp/bosun-slurm-slot-S.lock`,
//! held for the cluster's life and released by the kernel if the test process dies. The slot
//! names everything that is global to the machine: the namespaces, the links, the subnet
//! `10.213.S.0/24`, `SlurmctldPort`/`SlurmdPort` and `ClusterName`. So clusters of tests that
//! run in parallel processes never collide, and a slot's leftovers from a killed test are
//! removed by the next cluster that takes it.
//!
//! `slurmctld` listens on every address of the root namespace; the nodes reach it, and anything
//! the test listens on, at [`SlurmCluster::host_addr`]. Each node's `NodeAddr` is its namespace's
//! address. The namespaces share the machine's UTS namespace, so `hostname` in a job prints the
//! machine's name; `SLURMD_NODENAME` and the job's addresses tell the nodes apart.
//!
//! The nodes are entered with `nsenter --net`, not `ip netns exec`: the latter mounts a fresh
//! `/sys`, where slurmd's cgroup plugin (which 22.05 initialises whatever the proctrack and task
//! plugins are) finds no cgroup filesystem and slurmd refuses to start.
//!
//! Everything needs root. Dropping the cluster (or [`SlurmCluster::stop`]) stops every daemon
//! and waits for it, kills every process left in the nodes' namespaces, and removes the
//! namespaces, links and bridge.

use std::fs::File;
use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// How many clusters can live on one machine at once.
const SLOTS: u32 = 64;
/// `slurmd` declares a node lost after this many seconds without an answer.
pub const SLURMD_TIMEOUT_SECS: u64 = 5;
/// How long finished jobs stay visible in `squeue`.
pub const MIN_JOB_AGE_SECS: u64 = 600;
/// CPUs each node declares (whatever the machine has), so that many jobs run on a node at once.
pub const CPUS_PER_NODE: u32 = 16;
/// The one partition, holding every node.
pub const PARTITION: &str = "main";
/// How long the cluster may take to show every node `idle`.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One daemon of the cluster: a process group of its own, its output in a log file.
struct Daemon {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn spawn(
        name: &str,
        mut cmd: Command,
        log: PathBuf,
        env: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let out =
            File::create(&log).with_context(|| format!("could not create {}", log.display()))?;
        let err = out.try_clone()?;
        cmd.env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into()),
            )
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd.spawn().with_context(|| {
            format!("could not start {name}: is it installed (Debian: slurmctld slurmd munge)?")
        })?;
        Ok(Self {
            name: name.into(),
            child,
            log,
        })
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// `None` while it runs, else how it ended.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// SIGTERM to its group, up to `grace` for it to exit, then SIGKILL; always reaped.
    fn stop(&mut self, grace: Duration) {
        let _ = killpg(self.pid(), Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = killpg(self.pid(), Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(self.pid(), Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn kill(&mut self) {
        let _ = killpg(self.pid(), Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One node: its Slurm name, its network namespace and its address there.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub netns: String,
    pub addr: Ipv4Addr,
    /// The root namespace's end of its veth pair.
    host_link: String,
}

/// A running Slurm cluster of the test's own. See the module's documentation.
pub struct SlurmCluster {
    dir: tempfile::TempDir,
    slot: u32,
    /// Held for the cluster's life: the slot is ours.
    _lock: File,
    bridge: String,
    host_addr: Ipv4Addr,
    ctld_port: u16,
    nodes: Vec<Node>,
    /// CPUs each node declares.
    cpus: u32,
    conf: PathBuf,
    munged: Option<Daemon>,
    slurmctld: Option<Daemon>,
    slurmds: Vec<Option<Daemon>>,
    stopped: bool,
}

impl SlurmCluster {
    /// Starts a cluster of `nodes` nodes (`node1`, `node2`, …) and waits until `sinfo` shows
    /// every node `idle`. Needs root. Panics with the daemons' logs if it does not come up.
    pub fn start(nodes: usize) -> SlurmCluster {
        match Self::try_start(nodes) {
            Ok(cluster) => cluster,
            Err(e) => panic!("the Slurm test cluster did not start: {e:#}"),
        }
    }

    /// [`SlurmCluster::start`], returning the error (with the daemons' logs) instead.
    pub fn try_start(nodes: usize) -> anyhow::Result<SlurmCluster> {
        Self::try_start_with_cpus(nodes, CPUS_PER_NODE)
    }

    /// A cluster whose nodes declare `cpus` CPUs each: with one, a node runs one job at a time
    /// and the others wait in Slurm's queue.
    pub fn try_start_with_cpus(nodes: usize, cpus: u32) -> anyhow::Result<SlurmCluster> {
        if nodes == 0 || nodes > 50 {
            bail!("a test cluster has 1 to 50 nodes, not {nodes}");
        }
        if !nix::unistd::Uid::effective().is_root() {
            bail!("the Slurm test cluster needs root (network namespaces, slurmd)");
        }
        for tool in [
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "sinfo",
            "ip",
            "nsenter",
        ] {
            if !on_path(tool) {
                bail!(
                    "{tool} is missing: install the Debian packages slurmctld slurmd slurm-client munge iproute2 util-linux (.ci/run does)"
                );
            }
        }
        let (slot, lock) = take_slot()?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("bosun-slurm{slot}-"))
            .tempdir_in("/tmp")
            .context("could not make the cluster's directory")?;
        let conf = dir.path().join("slurm.conf");
        let host_addr = Ipv4Addr::new(10, 213, slot as u8, 1);
        let node_list = (1..=nodes)
            .map(|i| Node {
                name: format!("node{i}"),
                netns: format!("bosun-slurm{slot}-node{i}"),
                addr: Ipv4Addr::new(10, 213, slot as u8, 10 + i as u8),
                host_link: format!("bsl{slot}n{i}"),
            })
            .collect();
        let mut cluster = SlurmCluster {
            dir,
            slot,
            _lock: lock,
            bridge: format!("bsl{slot}br"),
            host_addr,
            ctld_port: 17100 + slot as u16,
            nodes: node_list,
            cpus,
            conf,
            munged: None,
            slurmctld: None,
            slurmds: Vec::new(),
            stopped: false,
        };
        // From here on, an error drops `cluster`, which removes whatever was made.
        cluster.network()?;
        cluster.write_config()?;
        cluster.start_daemons()?;
        if let Err(e) = cluster.wait_idle() {
            bail!("{e:#}\n{}", cluster.logs());
        }
        Ok(cluster)
    }

    /// The address of the root namespace on the cluster's bridge: what a job on any node dials
    /// to reach the test (listen on it, or on 0.0.0.0).
    pub fn host_addr(&self) -> Ipv4Addr {
        self.host_addr
    }

    /// The environment every Slurm command (and a `bosund` that submits) needs: `SLURM_CONF`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("SLURM_CONF".into(), self.conf.display().to_string())]
    }

    /// The cluster's `slurm.conf`.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// The cluster's own directory (a good place for jobs' working and output files: the
    /// nodes share the machine's filesystem).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The one partition (the default), holding every node.
    pub fn partition(&self) -> &str {
        PARTITION
    }

    /// The nodes' Slurm names, in order: `node1`, `node2`, …
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The cluster's slot (see the module's documentation).
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The nodes.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The network namespace of the node named `node`. Panics on an unknown name.
    pub fn ns_of(&self, node: &str) -> &str {
        match self.nodes.iter().find(|n| n.name == node) {
            Some(n) => &n.netns,
            None => panic!(
                "no node {node} in this cluster: it has {:?}",
                self.node_names()
            ),
        }
    }

    /// The address of the node named `node` in its namespace. Panics on an unknown name.
    pub fn addr_of(&self, node: &str) -> Ipv4Addr {
        match self.nodes.iter().find(|n| n.name == node) {
            Some(n) => n.addr,
            None => panic!(
                "no node {node} in this cluster: it has {:?}",
                self.node_names()
            ),
        }
    }

    /// A command run inside the node's network namespace (`nsenter --net`), with the cluster's
    /// environment.
    pub fn command_in(&self, node: &str, program: &str) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net=/run/netns/{}", self.ns_of(node)))
            .arg(program)
            .envs(self.env());
        cmd
    }

    /// A Slurm client command (`sbatch`, `squeue`, `scontrol`, …) with the cluster's
    /// environment.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.envs(self.env());
        cmd
    }

    /// Runs a Slurm client command to its end and returns its stdout; fails with its stderr.
    pub fn run(&self, program: &str, args: &[&str]) -> anyhow::Result<String> {
        let out = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("could not run {program}"))?;
        if !out.status.success() {
            bail!(
                "{program} {args:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Each node's state as `sinfo` reports it (`idle`, `alloc`, `mix`, `down*`, …).
    pub fn node_states(&self) -> anyhow::Result<Vec<(String, String)>> {
        let out = self.run("sinfo", &["--noheader", "--Node", "--format=%N %T"])?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let (n, s) = l.trim().split_once(' ')?;
                Some((n.to_string(), s.trim().to_string()))
            })
            .collect())
    }

    /// The state of one node (`sinfo`), e.g. `idle` or `down*`.
    pub fn node_state(&self, node: &str) -> anyhow::Result<String> {
        self.node_states()?
            .into_iter()
            .find(|(n, _)| n == node)
            .map(|(_, s)| s)
            .with_context(|| format!("sinfo does not list {node}"))
    }

    /// Loses node `i` (0-based, in [`SlurmCluster::node_names`] order): SIGKILL to its slurmd and
    /// to every process in its namespace (`ip netns pids`), until none is left. The namespace
    /// and its address stay, so slurmctld's pings are refused at once.
    pub fn kill_node(&mut self, i: usize) -> anyhow::Result<()> {
        let node = self
            .nodes
            .get(i)
            .cloned()
            .with_context(|| format!("no node {i}: the cluster has {}", self.nodes.len()))?;
        // Taken out, so that the stop at the end does not signal its group number again.
        if let Some(mut d) = self.slurmds.get_mut(i).and_then(Option::take) {
            d.kill();
        }
        kill_netns_processes(&node.netns)?;
        Ok(())
    }

    /// The pids of every process in the node's namespace.
    pub fn pids_in(&self, node: &str) -> Vec<i32> {
        netns_pids(self.ns_of(node))
    }

    /// The daemons' logs (the tail of each), for an error message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        let mut files: Vec<PathBuf> = [&self.munged, &self.slurmctld]
            .into_iter()
            .chain(self.slurmds.iter())
            .flatten()
            .map(|d| d.log.clone())
            .collect();
        files.push(self.dir.path().join("log/slurmctld.log"));
        for n in &self.nodes {
            files.push(self.dir.path().join(format!("log/slurmd-{}.log", n.name)));
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(25)..];
            out.push_str(&format!(
                "--- {} (last {} lines)\n{}\n",
                f.display(),
                tail.len(),
                tail.join("\n")
            ));
        }
        out
    }

    /// Stops every daemon and process of the cluster (waiting for each) and removes its
    /// namespaces, links and bridge. Dropping the cluster does the same.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        for d in self.slurmds.iter_mut().flatten() {
            d.stop(Duration::from_secs(10));
        }
        for n in &self.nodes {
            let _ = kill_netns_processes(&n.netns);
        }
        if let Some(d) = self.slurmctld.as_mut() {
            d.stop(Duration::from_secs(10));
        }
        if let Some(d) = self.munged.as_mut() {
            d.stop(Duration::from_secs(5));
        }
        remove_network(self.slot, &self.nodes, &self.bridge);
    }

    /// What of this cluster is still there: processes that name its directory, its
    /// namespaces and links. Empty after [`SlurmCluster::stop`].
    pub fn leftovers(&self) -> Vec<String> {
        leftovers_of(self.slot, self.dir.path())
    }

    fn network(&mut self) -> anyhow::Result<()> {
        // Leftovers of a test process that died holding this slot.
        cleanup_slot(self.slot);
        let subnet = format!("10.213.{}.", self.slot);
        let addrs = ip_out(&["-4", "-o", "addr", "show"])?;
        if addrs.contains(&subnet) {
            bail!(
                "the subnet {subnet}0/24 is already in use on this machine; free it or change the slot's subnet in tests/src/slurm.rs"
            );
        }
        let br = self.bridge.clone();
        ip(&["link", "add", &br, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{}/24", self.host_addr), "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        for n in &self.nodes {
            let peer = format!("{}p", n.host_link);
            ip(&["netns", "add", &n.netns])?;
            ip(&[
                "link",
                "add",
                &n.host_link,
                "type",
                "veth",
                "peer",
                "name",
                &peer,
            ])?;
            ip(&["link", "set", &peer, "netns", &n.netns])?;
            ip(&["-n", &n.netns, "link", "set", &peer, "name", "eth0"])?;
            ip(&["link", "set", &n.host_link, "master", &br])?;
            ip(&["link", "set", &n.host_link, "up"])?;
            ip(&[
                "-n",
                &n.netns,
                "addr",
                "add",
                &format!("{}/24", n.addr),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &n.netns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &n.netns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn write_config(&self) -> anyhow::Result<()> {
        let d = self.dir.path().display().to_string();
        for sub in ["state", "spool", "log", "run", "munge"] {
            std::fs::create_dir_all(self.dir.path().join(sub))?;
        }
        for n in &self.nodes {
            std::fs::create_dir_all(self.dir.path().join("spool").join(&n.name))?;
        }
        std::fs::set_permissions(
            self.dir.path().join("munge"),
            std::fs::Permissions::from_mode(0o700),
        )?;
        // A fresh key for this cluster's munged, readable by root alone.
        let key_path = self.dir.path().join("munge/munge.key");
        let mut key = [0u8; 1024];
        rand::fill(&mut key[..]);
        let mut f = File::create(&key_path)?;
        f.write_all(&key)?;
        drop(f);
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o400))?;

        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .context("could not read this machine's hostname")?;
        let host = host
            .trim()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let names = self
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>();
        let mut conf = format!(
            "# A bosun test cluster (tests/src/slurm.rs), slot {slot}.
ClusterName=bosun{slot}
SlurmctldHost={host}({addr})
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SlurmdTimeout={timeout}
MessageTimeout=5
KillWait=2
InactiveLimit=0
MinJobAge={min_job_age}
JobRequeue=0
MailProg=/bin/true
SchedulerType=sched/builtin
",
            slot = self.slot,
            addr = self.host_addr,
            ctld_port = self.ctld_port,
            slurmd_port = 17300 + self.slot,
            timeout = SLURMD_TIMEOUT_SECS,
            min_job_age = MIN_JOB_AGE_SECS,
        );
        for n in &self.nodes {
            conf.push_str(&format!(
                "NodeName={} NodeAddr={} CPUs={} State=UNKNOWN\n",
                n.name, n.addr, self.cpus
            ));
        }
        conf.push_str(&format!(
            "PartitionName={PARTITION} Nodes={} Default=YES MaxTime=INFINITE LLN=YES State=UP\n",
            names.join(",")
        ));
        std::fs::write(&self.conf, conf)?;
        // slurmd initialises a cgroup plugin whatever the other plugins are; it must not need
        // systemd (cgroup v2) to do so.
        std::fs::write(
            self.dir.path().join("cgroup.conf"),
            "CgroupPlugin=autodetect\nIgnoreSystemd=yes\n",
        )?;
        Ok(())
    }

    fn start_daemons(&mut self) -> anyhow::Result<()> {
        let d = self.dir.path().to_path_buf();
        let env = self.env();
        let mut munged = Command::new("munged");
        munged
            .args(["--foreground", "--force"])
            .arg(format!(
                "--socket={}",
                d.join("munge/munge.socket").display()
            ))
            .arg(format!(
                "--key-file={}",
                d.join("munge/munge.key").display()
            ))
            .arg(format!(
                "--log-file={}",
                d.join("munge/munged.log").display()
            ))
            .arg(format!(
                "--pid-file={}",
                d.join("munge/munged.pid").display()
            ))
            .arg(format!(
                "--seed-file={}",
                d.join("munge/munged.seed").display()
            ));
        self.munged = Some(Daemon::spawn(
            "munged",
            munged,
            d.join("log/munged.out"),
            &env,
        )?);
        let socket = d.join("munge/munge.socket");
        let munged_ok = crate::wait_for("munged's socket", Duration::from_secs(10), || {
            if let Some(m) = self.munged.as_mut()
                && let Some(status) = m.exited()
            {
                bail!("munged exited ({status})");
            }
            Ok(socket.exists().then_some(()))
        });
        if let Err(e) = munged_ok {
            bail!("{e:#}\n{}", self.logs());
        }

        let mut ctld = Command::new("slurmctld");
        ctld.args(["-D", "-i"]);
        self.slurmctld = Some(Daemon::spawn(
            "slurmctld",
            ctld,
            d.join("log/slurmctld.out"),
            &env,
        )?);
        // slurmd registers with slurmctld when it starts; it retries, but starting it once
        // slurmctld listens keeps the start quick.
        let port = self.ctld_port;
        let ctld_ok = crate::wait_for("slurmctld to listen", Duration::from_secs(20), || {
            if let Some(c) = self.slurmctld.as_mut()
                && let Some(status) = c.exited()
            {
                bail!("slurmctld exited ({status})");
            }
            Ok(std::net::TcpStream::connect_timeout(
                &(self.host_addr, port).into(),
                Duration::from_millis(200),
            )
            .ok()
            .map(|_| ()))
        });
        if let Err(e) = ctld_ok {
            bail!("{e:#}\n{}", self.logs());
        }
        for n in self.nodes.clone() {
            let mut slurmd = Command::new("nsenter");
            slurmd
                .arg(format!("--net=/run/netns/{}", n.netns))
                .args(["slurmd", "-D", "-N", &n.name]);
            let log = d.join(format!("log/slurmd-{}.out", n.name));
            self.slurmds.push(Some(Daemon::spawn(
                &format!("slurmd {}", n.name),
                slurmd,
                log,
                &env,
            )?));
        }
        Ok(())
    }

    fn wait_idle(&mut self) -> anyhow::Result<()> {
        let want = self.nodes.len();
        let mut last = Vec::new();
        let r = crate::wait_for("every node to be idle", START_TIMEOUT, || {
            for d in [&mut self.munged, &mut self.slurmctld]
                .into_iter()
                .chain(self.slurmds.iter_mut())
                .flatten()
            {
                if let Some(status) = d.exited() {
                    bail!("{} exited ({status})", d.name);
                }
            }
            let states = self.node_states().unwrap_or_default();
            let idle = states.iter().filter(|(_, s)| s == "idle").count();
            last = states;
            Ok((idle == want).then_some(()))
        });
        r.with_context(|| format!("the nodes' last states: {last:?}"))
    }
}

impl Drop for SlurmCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(tool).is_file())
}

/// Takes the first free slot: its lock file, held exclusively, and its ports free.
fn take_slot() -> anyhow::Result<(u32, File)> {
    for slot in 0..SLOTS {
        let path = format!("/tmp/bosun-slurm-slot-{slot}.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("could not open {path}"))?;
        if file.try_lock().is_err() {
            continue;
        }
        // A port someone else holds makes the slot unusable; try the next.
        if TcpListener::bind(("0.0.0.0", 17100 + slot as u16)).is_err() {
            continue;
        }
        return Ok((slot, file));
    }
    bail!("all {SLOTS} Slurm test cluster slots are taken (/tmp/bosun-slurm-slot-*.lock)")
}

/// Runs `ip ARGS`; fails with its stderr.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    ip_out(args).map(|_| ())
}

fn ip_out(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("could not run ip (install iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn netns_pids(netns: &str) -> Vec<i32> {
    ip_out(&["netns", "pids", netns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// SIGKILL to every process in `netns`, in rounds, until none is left (10 s at most).
fn kill_netns_processes(netns: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = netns_pids(netns);
        if pids.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("processes {pids:?} in {netns} survived SIGKILL for 10 s");
        }
        for pid in pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn netns_of_slot(slot: u32) -> Vec<String> {
    let prefix = format!("bosun-slurm{slot}-");
    ip_out(&["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

fn links_of_slot(slot: u32) -> Vec<String> {
    let prefix = format!("bsl{slot}");
    ip_out(&["-o", "link", "show"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or_default().to_string())
        .filter(|n| {
            // bsl1… must not match bsl12…: what follows the slot is `n` or `br`.
            n.strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with('n') || rest == "br")
        })
        .collect()
}

/// Removes every namespace and link a cluster of `slot` may have left (a test that died).
fn cleanup_slot(slot: u32) {
    for ns in netns_of_slot(slot) {
        let _ = kill_netns_processes(&ns);
        let _ = ip(&["netns", "del", &ns]);
    }
    for link in links_of_slot(slot) {
        let _ = ip(&["link", "del", &link]);
    }
}

fn remove_network(slot: u32, nodes: &[Node], bridge: &str) {
    for n in nodes {
        let _ = kill_netns_processes(&n.netns);
        let _ = ip(&["netns", "del", &n.netns]);
        let _ = ip(&["link", "del", &n.host_link]);
    }
    let _ = ip(&["link", "del", bridge]);
    cleanup_slot(slot);
}

/// What a cluster of `slot` whose directory was `dir` left: processes naming the directory,
/// its namespaces and links. Empty once the cluster was stopped or dropped.
pub fn leftovers_of(slot: u32, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let dir = dir.display().to_string();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // A zombie has an empty command line: it is gone but for its parent's wait.
            if cmdline.contains(&dir) {
                out.push(format!("process {pid}: {}", cmdline.trim()));
            }
        }
    }
    out.extend(
        netns_of_slot(slot)
            .into_iter()
            .map(|n| format!("namespace {n}")),
    );
    out.extend(links_of_slot(slot).into_iter().map(|l| format!("link {l}")));
    out
}
