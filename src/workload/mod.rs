//! Workloads: turn the config's workloads into call specs and job templates.
//!
//! Owns: the built-in workload kinds (the seed's Flow Insight actor tree, fan-out /
//! map-reduce, GPU training in a placement group, actor pools, a Poisson job mix).
//! Must never: touch the model; the engine runs what this module describes.

pub mod program;
mod replay;

pub use program::{ActorOptions, ActorTree, CallSpec, FlagRule, LevelRule, Op, Shape, SpecId, StrategySpec, TreeNode};

use crate::config::{
    ActorPoolConfig, DurationDist, DurationSpec, FanOutConfig, FlowInsightConfig, StrategyConfig, StrategyKind,
    TrainingConfig, ValueType, WorkloadConfig,
};
use crate::model::{FixedPoint, Names, PgStrategy, ResourceId, ResourceNames, ResourceRequest, TaskType};
use std::collections::BTreeMap;

/// A job that can be started: its driver program and how it is described.
#[derive(Clone, Debug)]
pub struct JobTemplate {
    pub name: String,
    pub entrypoint: String,
    pub driver: SpecId,
    /// The most tasks and actors one job of this template creates (for admission).
    pub tasks: u64,
}

/// A steady stream of jobs drawn from weighted templates.
#[derive(Clone, Debug)]
pub struct JobMix {
    pub name: String,
    pub start: u64,
    pub until: Option<u64>,
    /// Mean time between arrivals, in µs.
    pub mean_interarrival_us: f64,
    pub max_concurrent_jobs: u32,
    pub templates: Vec<(f64, JobTemplate)>,
}

/// What the engine needs to run the configured workloads.
#[derive(Default, Debug)]
pub struct Plan {
    pub specs: Vec<CallSpec>,
    /// One-off jobs and when they start.
    pub jobs: Vec<(u64, JobTemplate)>,
    pub mixes: Vec<JobMix>,
}

impl Plan {
    /// Objects the one-off jobs will hold at their peak: a fan-out's map outputs all wait
    /// for their reducers, so a million maps mean a million live objects. The engine sizes
    /// the object table once instead of doubling and copying it while they arrive.
    pub fn expected_peak_objects(workloads: &[WorkloadConfig]) -> usize {
        workloads
            .iter()
            .map(|w| match w {
                WorkloadConfig::FanOut(c) => (c.tasks + c.reducers) as usize,
                WorkloadConfig::ActorPool(c) => c.actors as usize * (c.calls_per_actor as usize + 1),
                _ => 0,
            })
            .sum::<usize>()
            .min(4_000_000)
    }
}

/// Builds specs into a registry shared by every job of a run.
pub struct Builder<'a> {
    pub specs: &'a mut Vec<CallSpec>,
    pub names: &'a mut Names,
    pub resources: &'a mut ResourceNames,
}

impl Builder<'_> {
    fn reserve(&mut self) -> SpecId {
        let id = self.specs.len() as SpecId;
        self.specs.push(CallSpec {
            kind: TaskType::NormalTask,
            name: self.names.intern(""),
            request: ResourceRequest::default(),
            strategy: StrategySpec::Default,
            program: Vec::new(),
            return_size: 0,
            zero_copy_return: false,
            put_in_body: false,
            heap: 0,
            max_retries: 0,
            retry_exceptions: false,
            actor: None,
            class: id,
        });
        id
    }

    fn request(&mut self, cpu: f64, gpu: f64, memory: u64, custom: &BTreeMap<String, f64>) -> ResourceRequest {
        let mut items = vec![
            (ResourceId::CPU, FixedPoint::from_f64(cpu)),
            (ResourceId::GPU, FixedPoint::from_f64(gpu)),
            (ResourceId::MEMORY, FixedPoint::from_f64(memory as f64)),
        ];
        for (name, q) in custom {
            let id = self.resources.intern(name);
            items.push((id, FixedPoint::from_f64(*q)));
        }
        ResourceRequest::new(items)
    }

    fn driver(&mut self, name: &str, program: Vec<Op>) -> SpecId {
        let id = self.reserve();
        let spec = &mut self.specs[id as usize];
        spec.kind = TaskType::DriverTask;
        spec.name = self.names.intern(name);
        spec.program = program;
        id
    }

    /// Build one workload into specs; returns its job template.
    pub fn template(&mut self, w: &WorkloadConfig) -> JobTemplate {
        let mut t = self.program_for(w);
        t.tasks = crate::config::limits::job_tasks(w).min(u64::MAX as f64) as u64;
        t
    }

    fn program_for(&mut self, w: &WorkloadConfig) -> JobTemplate {
        match w {
            WorkloadConfig::FlowInsight(c) => self.flow_insight(c),
            WorkloadConfig::FanOut(c) => self.fan_out(c),
            WorkloadConfig::Training(c) => self.training(c),
            WorkloadConfig::ActorPool(c) => self.actor_pool(c),
            WorkloadConfig::Replay(c) => self.replay(c),
            // A mix inside a mix is rejected by validation; treat it as its first template.
            WorkloadConfig::JobMix(m) => match m.templates.first() {
                Some(t) => self.template(&t.workload),
                None => self.fan_out_default(),
            },
        }
    }

    fn fan_out_default(&mut self) -> JobTemplate {
        let c: FanOutConfig = serde_yaml::from_str("tasks: 1").expect("literal fan-out config");
        self.fan_out(&c)
    }

    /// The seed's Flow Insight program (shared/seeds/003): a tree of `Worker` actors.
    fn flow_insight(&mut self, c: &FlowInsightConfig) -> JobTemplate {
        let tree = c.tree.as_ref().map(|t| std::sync::Arc::new(ActorTree::from_config(t)));
        let ctor = self.reserve();
        let process = self.reserve();
        let class = self.names.intern("Worker");
        let (request, holds) = actor_request(self, c.num_cpus, 0.0, 0);
        {
            let name = self.names.intern("Worker.__init__");
            let s = &mut self.specs[ctor as usize];
            s.kind = TaskType::ActorCreationTask;
            s.name = name;
            s.request = request;
            s.max_retries = 0;
            s.actor = Some(ActorOptions {
                class,
                max_restarts: 0,
                max_task_retries: 0,
                max_concurrency: c.max_concurrency.max(1),
                holds_resources: holds,
            });
            // `if self.depth > 0: for _ in range(randint(1, 2)): Worker.remote(depth-1, randint(0,1)==1)`
            let (min, max) = c.children_range();
            s.program = vec![Op::CreateActors {
                spec: ctor,
                level: LevelRule::BelowParent,
                shape: match &tree {
                    Some(t) => Shape::Given(t.clone()),
                    None => Shape::Drawn { min, max, flag: FlagRule::Random(c.bottleneck_chance()) },
                },
            }];
        }
        {
            let name = self.names.intern("Worker.process");
            let s = &mut self.specs[process as usize];
            s.kind = TaskType::ActorTask;
            s.name = name;
            s.return_size = c.return_size.0;
            s.zero_copy_return = c.value_type == ValueType::Numpy;
            s.program = vec![
                Op::CallEach {
                    method: process,
                    calls: c.calls_per_child,
                    sleep: c.sleep.as_micros(),
                    bottleneck_sleep: c.bottleneck_sleep.as_micros(),
                },
                Op::Get,
            ];
        }
        let driver = self.driver(
            &format!("{}.driver", c.name),
            vec![
                Op::CreateActors {
                    spec: ctor,
                    level: LevelRule::Fixed(c.root_depth()),
                    shape: match &tree {
                        Some(t) => Shape::Given(t.clone()),
                        None => Shape::Drawn { min: 1, max: 1, flag: FlagRule::Fixed(c.root_bottleneck) },
                    },
                },
                Op::CallEach { method: process, calls: 1, sleep: 0, bottleneck_sleep: 0 },
                Op::Get,
            ],
        );
        JobTemplate {
            name: c.name.clone(),
            entrypoint: format!("flow-insight --depth {}", c.root_depth()),
            driver,
            tasks: 0,
        }
    }

    fn fan_out(&mut self, c: &FanOutConfig) -> JobTemplate {
        let map = self.reserve();
        let request = self.request(c.num_cpus, c.num_gpus, 0, &c.resources);
        let strategy = strategy_spec(&c.strategy);
        let name = self.names.intern(&c.function);
        {
            let s = &mut self.specs[map as usize];
            s.kind = TaskType::NormalTask;
            s.name = name;
            s.request = request.clone();
            s.strategy = strategy.clone();
            s.program = vec![Op::Compute(c.task_duration)];
            s.return_size = c.output_size.0;
            s.zero_copy_return = c.value_type == ValueType::Numpy;
            s.heap = c.memory.0;
            s.max_retries = c.max_retries;
            s.retry_exceptions = c.retry_exceptions;
        }
        // `ref = ray.put(weights)`, then every map task takes `ref`.
        let shared = c.shared_input.0 > 0;
        let mut program = if shared { vec![Op::Put(c.shared_input.0)] } else { Vec::new() };
        program.push(Op::Submit { spec: map, count: c.tasks as u32, take_futures: false, with_puts: shared });
        if c.reducers > 0 {
            let reduce = self.reserve();
            let name = self.names.intern("reduce");
            let s = &mut self.specs[reduce as usize];
            s.kind = TaskType::NormalTask;
            s.name = name;
            s.request = request;
            s.strategy = strategy;
            s.program = vec![Op::Compute(c.reduce_duration)];
            s.return_size = (c.output_size.0 / 4).max(8);
            s.zero_copy_return = c.value_type == ValueType::Numpy;
            s.heap = c.memory.0;
            s.max_retries = c.max_retries;
            s.retry_exceptions = c.retry_exceptions;
            program.push(Op::Submit { spec: reduce, count: c.reducers as u32, take_futures: true, with_puts: false });
        }
        program.push(Op::Get);
        let driver = self.driver(&format!("{}.driver", c.name), program);
        let entrypoint = if c.reducers > 0 {
            format!("map-reduce --tasks {} --reducers {}", c.tasks, c.reducers)
        } else {
            format!("fan-out --tasks {}", c.tasks)
        };
        JobTemplate { name: c.name.clone(), entrypoint, driver, tasks: 0 }
    }

    fn training(&mut self, c: &TrainingConfig) -> JobTemplate {
        let ctor = self.reserve();
        let step = self.reserve();
        let bundle = self.request(c.bundle_cpu, c.bundle_gpu, c.bundle_memory.0, &BTreeMap::new());
        let class = self.names.intern("TrainWorker");
        {
            let name = self.names.intern("TrainWorker.__init__");
            let s = &mut self.specs[ctor as usize];
            s.kind = TaskType::ActorCreationTask;
            s.name = name;
            s.request = bundle.clone();
            s.strategy = StrategySpec::CallerPlacementGroup;
            // Loading the model onto the GPU.
            s.program = vec![Op::Compute(DurationDist::fixed(DurationSpec::secs(5.0)))];
            s.actor = Some(ActorOptions {
                class,
                max_restarts: c.max_restarts,
                max_task_retries: c.max_task_retries,
                max_concurrency: 1,
                holds_resources: true,
            });
        }
        {
            let name = self.names.intern("TrainWorker.train_step");
            let s = &mut self.specs[step as usize];
            s.kind = TaskType::ActorTask;
            s.name = name;
            s.program = vec![Op::Compute(c.step_duration)];
            s.return_size = c.gradient_size.0;
            s.zero_copy_return = c.value_type == ValueType::Numpy;
        }
        let strategy = match c.placement_strategy {
            crate::config::PgStrategyConfig::Pack => PgStrategy::Pack,
            crate::config::PgStrategyConfig::Spread => PgStrategy::Spread,
            crate::config::PgStrategyConfig::StrictPack => PgStrategy::StrictPack,
            crate::config::PgStrategyConfig::StrictSpread => PgStrategy::StrictSpread,
        };
        let driver = self.driver(
            &format!("{}.driver", c.name),
            vec![
                Op::CreatePlacementGroup { bundles: vec![bundle; c.workers as usize], strategy },
                Op::CreateActors { spec: ctor, level: LevelRule::Fixed(0), shape: Shape::exactly(c.workers) },
                Op::CallEach { method: step, calls: 1, sleep: 0, bottleneck_sleep: 0 },
                Op::Get,
                Op::Repeat { to: 2, times: c.steps.saturating_sub(1) },
                Op::RemovePlacementGroup,
            ],
        );
        JobTemplate {
            name: c.name.clone(),
            entrypoint: format!("train --workers {} --steps {}", c.workers, c.steps),
            driver,
            tasks: 0,
        }
    }

    fn actor_pool(&mut self, c: &ActorPoolConfig) -> JobTemplate {
        let ctor = self.reserve();
        let method = self.reserve();
        let class = self.names.intern(&c.class);
        let (request, holds) = actor_request(self, c.num_cpus, c.num_gpus, c.memory.0);
        let strategy = strategy_spec(&c.strategy);
        {
            let name = self.names.intern(&format!("{}.__init__", c.class));
            let s = &mut self.specs[ctor as usize];
            s.kind = TaskType::ActorCreationTask;
            s.name = name;
            s.request = request;
            s.strategy = strategy;
            s.actor = Some(ActorOptions {
                class,
                max_restarts: c.max_restarts,
                max_task_retries: c.max_task_retries,
                max_concurrency: c.max_concurrency.max(1),
                holds_resources: holds,
            });
        }
        {
            let name = self.names.intern(&format!("{}.run", c.class));
            let s = &mut self.specs[method as usize];
            s.kind = TaskType::ActorTask;
            s.name = name;
            s.program = vec![Op::Compute(c.call_duration)];
            s.return_size = c.return_size.0;
            s.zero_copy_return = c.value_type == ValueType::Numpy;
            s.heap = c.memory.0;
        }
        let mut program =
            vec![Op::CreateActors { spec: ctor, level: LevelRule::Fixed(0), shape: Shape::exactly(c.actors) }];
        if c.warm_up {
            program.extend([Op::CallEach { method, calls: 1, sleep: 0, bottleneck_sleep: 0 }, Op::Get]);
        }
        program.extend([Op::CallEach { method, calls: c.calls_per_actor, sleep: 0, bottleneck_sleep: 0 }, Op::Get]);
        let driver = self.driver(&format!("{}.driver", c.name), program);
        JobTemplate {
            name: c.name.clone(),
            entrypoint: format!("actor-pool --actors {} --calls {}", c.actors, c.calls_per_actor),
            driver,
            tasks: 0,
        }
    }
}

/// Ray's actor resource default: 1 CPU to be placed, 0 while alive; explicit resources are held.
fn actor_request(b: &mut Builder, num_cpus: Option<f64>, gpu: f64, memory: u64) -> (ResourceRequest, bool) {
    match num_cpus {
        Some(cpu) => (b.request(cpu, gpu, memory, &BTreeMap::new()), true),
        None if gpu > 0.0 || memory > 0 => (b.request(0.0, gpu, memory, &BTreeMap::new()), true),
        None => (ResourceRequest::cpu(1.0), false),
    }
}

fn strategy_spec(s: &StrategyConfig) -> StrategySpec {
    match s.kind {
        StrategyKind::Default => StrategySpec::Default,
        StrategyKind::Spread => StrategySpec::Spread,
        StrategyKind::NodeAffinity => {
            StrategySpec::NodeAffinity { ip: s.node.clone().unwrap_or_default(), soft: s.soft }
        }
    }
}

/// Build every configured workload.
pub fn plan(workloads: &[WorkloadConfig], names: &mut Names, resources: &mut ResourceNames) -> Plan {
    let mut specs = Vec::new();
    let mut jobs = Vec::new();
    let mut mixes = Vec::new();
    {
        let mut b = Builder { specs: &mut specs, names, resources };
        for w in workloads {
            match w {
                WorkloadConfig::JobMix(m) => {
                    let templates = m.templates.iter().map(|t| (t.weight, b.template(&t.workload))).collect();
                    mixes.push(JobMix {
                        name: m.name.clone(),
                        start: m.start.as_micros(),
                        until: m.until.map(|u| u.as_micros()),
                        mean_interarrival_us: 60e6 / m.arrivals_per_minute.max(1e-9),
                        max_concurrent_jobs: m.max_concurrent_jobs,
                        templates,
                    });
                }
                other => {
                    let t = b.template(other);
                    jobs.push((other.start().as_micros(), t));
                }
            }
        }
    }
    Plan { specs, jobs, mixes }
}

/// Build one workload on demand (job submission); its specs join the registry.
pub fn template_for(
    w: &WorkloadConfig,
    specs: &mut Vec<CallSpec>,
    names: &mut Names,
    resources: &mut ResourceNames,
) -> JobTemplate {
    Builder { specs, names, resources }.template(w)
}
