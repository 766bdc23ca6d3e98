//! Ray's state enumerations, with their exact wire names.

use serde::Serialize;

macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $wire:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize)]
        pub enum $name { $(#[serde(rename = $wire)] $variant),* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),* }
            }
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($wire => Some($name::$variant),)* _ => None }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

wire_enum!(
    /// Ray's `TaskStatus` (common.proto), as the State API and `ray_tasks` name them.
    TaskState {
        Nil => "NIL",
        PendingArgsAvail => "PENDING_ARGS_AVAIL",
        PendingNodeAssignment => "PENDING_NODE_ASSIGNMENT",
        PendingObjStoreMemAvail => "PENDING_OBJ_STORE_MEM_AVAIL",
        PendingArgsFetch => "PENDING_ARGS_FETCH",
        SubmittedToWorker => "SUBMITTED_TO_WORKER",
        PendingActorTaskArgsFetch => "PENDING_ACTOR_TASK_ARGS_FETCH",
        PendingActorTaskOrderingOrConcurrency => "PENDING_ACTOR_TASK_ORDERING_OR_CONCURRENCY",
        Running => "RUNNING",
        RunningInRayGet => "RUNNING_IN_RAY_GET",
        RunningInRayWait => "RUNNING_IN_RAY_WAIT",
        Finished => "FINISHED",
        Failed => "FAILED",
        GettingAndPinningArgs => "GETTING_AND_PINNING_ARGS",
    }
);

impl TaskState {
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Finished | TaskState::Failed)
    }
    pub fn is_running(self) -> bool {
        matches!(self, TaskState::Running | TaskState::RunningInRayGet | TaskState::RunningInRayWait)
    }
    /// The transitions Ray's task lifecycle allows. Retries re-enter a pending state
    /// from a running or fetch state (a new attempt); everything else moves forward.
    pub fn can_move_to(self, next: TaskState) -> bool {
        use TaskState::*;
        if self.is_terminal() {
            return false;
        }
        match next {
            Nil | GettingAndPinningArgs | RunningInRayWait => false,
            PendingArgsAvail => matches!(
                self,
                Nil | PendingNodeAssignment
                    | PendingArgsFetch
                    | SubmittedToWorker
                    | Running
                    | RunningInRayGet
                    | PendingActorTaskOrderingOrConcurrency
                    | PendingActorTaskArgsFetch
            ),
            PendingNodeAssignment => matches!(
                self,
                Nil | PendingArgsAvail | PendingArgsFetch | SubmittedToWorker | Running | RunningInRayGet
            ),
            PendingObjStoreMemAvail => false,
            PendingArgsFetch => matches!(self, PendingNodeAssignment),
            PendingActorTaskOrderingOrConcurrency => matches!(
                self,
                Nil | PendingArgsAvail | SubmittedToWorker | Running | RunningInRayGet | PendingActorTaskArgsFetch
            ),
            PendingActorTaskArgsFetch => matches!(self, PendingActorTaskOrderingOrConcurrency),
            SubmittedToWorker => matches!(
                self,
                PendingNodeAssignment
                    | PendingArgsFetch
                    | PendingActorTaskOrderingOrConcurrency
                    | PendingActorTaskArgsFetch
            ),
            // Actor calls start from their actor's queue, an actor's creation from its lease.
            Running => matches!(
                self,
                SubmittedToWorker
                    | RunningInRayGet
                    | Nil
                    | PendingActorTaskOrderingOrConcurrency
                    | PendingActorTaskArgsFetch
                    | PendingNodeAssignment
                    | PendingArgsFetch
            ),
            RunningInRayGet => matches!(self, Running),
            Finished => self.is_running(),
            Failed => true,
        }
    }
}

wire_enum!(
    /// Task types as the State API names them.
    TaskType {
        NormalTask => "NORMAL_TASK",
        ActorCreationTask => "ACTOR_CREATION_TASK",
        ActorTask => "ACTOR_TASK",
        DriverTask => "DRIVER_TASK",
    }
);

wire_enum!(
    ActorState {
        DependenciesUnready => "DEPENDENCIES_UNREADY",
        PendingCreation => "PENDING_CREATION",
        Alive => "ALIVE",
        Restarting => "RESTARTING",
        Dead => "DEAD",
    }
);

impl ActorState {
    pub fn can_move_to(self, next: ActorState) -> bool {
        use ActorState::*;
        match (self, next) {
            (Dead, _) => false,
            (DependenciesUnready, PendingCreation) => true,
            (PendingCreation, Alive) => true,
            (Alive, Restarting) | (PendingCreation, Restarting) => true,
            (Restarting, Alive) | (Restarting, PendingCreation) => true,
            (_, Dead) => true,
            _ => false,
        }
    }
}

wire_enum!(
    JobStatus {
        Pending => "PENDING",
        Running => "RUNNING",
        Stopped => "STOPPED",
        Succeeded => "SUCCEEDED",
        Failed => "FAILED",
    }
);

impl JobStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Stopped | JobStatus::Succeeded | JobStatus::Failed)
    }
}

wire_enum!(
    PgState {
        Pending => "PENDING",
        Prepared => "PREPARED",
        Created => "CREATED",
        Removed => "REMOVED",
        Rescheduling => "RESCHEDULING",
    }
);

wire_enum!(
    PgStrategy {
        Pack => "PACK",
        Spread => "SPREAD",
        StrictPack => "STRICT_PACK",
        StrictSpread => "STRICT_SPREAD",
    }
);

wire_enum!(
    NodeState {
        Alive => "ALIVE",
        Dead => "DEAD",
    }
);

wire_enum!(
    /// Why pending work cannot be scheduled (`ray_scheduler_unscheduleable_tasks{Reason}`).
    UnschedulableReason {
        Infeasible => "Infeasible",
        WaitingForResources => "WaitingForResources",
        WaitingForPlasmaMemory => "WaitingForPlasmaMemory",
        WaitingForRemoteResources => "WaitingForRemoteResources",
        WaitingForWorkers => "WaitingForWorkers",
    }
);

wire_enum!(
    /// Error types on failed tasks, as Ray's `error_type`.
    ErrorType {
        WorkerDied => "WORKER_DIED",
        NodeDied => "NODE_DIED",
        ActorDied => "ACTOR_DIED",
        TaskExecutionException => "TASK_EXECUTION_EXCEPTION",
        OutOfMemory => "OUT_OF_MEMORY",
        ObjectLost => "OBJECT_LOST",
        TaskUnschedulable => "TASK_UNSCHEDULABLE_ERROR",
        ActorUnschedulable => "ACTOR_UNSCHEDULABLE_ERROR",
        TaskCancelled => "TASK_CANCELLED",
        JobStopped => "JOB_STOPPED",
    }
);

impl ErrorType {
    /// System failures are retried within `max_retries`; application errors only with `retry_exceptions`.
    pub fn is_system(self) -> bool {
        matches!(self, ErrorType::WorkerDied | ErrorType::NodeDied | ErrorType::OutOfMemory | ErrorType::ObjectLost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(*s));
        }
        assert_eq!(TaskState::RunningInRayGet.as_str(), "RUNNING_IN_RAY_GET");
        assert_eq!(ActorState::DependenciesUnready.as_str(), "DEPENDENCIES_UNREADY");
    }

    #[test]
    fn terminal_states_never_move() {
        for s in TaskState::ALL {
            assert!(!TaskState::Finished.can_move_to(*s));
            assert!(!TaskState::Failed.can_move_to(*s));
        }
        assert!(!ActorState::Dead.can_move_to(ActorState::Alive));
    }
}
