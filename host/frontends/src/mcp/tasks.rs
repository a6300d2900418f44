//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a `tools/call` answered
//! at once with a task id, the call running on; `tasks/get` reports its status and latest
//! progress, then its result; `tasks/cancel` stops it as `notifications/cancelled` stops a call
//! (the sandbox is dropped, the outcome is `cancelled`); `tasks/update` has nothing to answer
//! (toolhost's tasks never wait for input).
//!
//! rmcp supplies the wire types and the routing of `tasks/*` (gated on the client's declared
//! extension); the store is toolhost's own, because its `TaskManager` has no caps, keeps
//! results by time only and forgets its tasks at shutdown. Here:
//!
//! - running tasks are capped per client and in all (`[mcp] tasks_max_running_per_client`,
//!   `tasks_max_running`): one more is refused with an error naming the setting;
//! - a finished task's result is kept `tasks_keep_s` after it ends, and at most
//!   `tasks_max_kept` finished tasks are kept (the oldest go first);
//! - a task is its client's — its token, its 2025 session, or over stdio the one client — never
//!   a name the client gives itself over HTTP: another client asking for its id is told it
//!   does not exist; a 2026-07-28 HTTP client with no token is nobody in particular
//!   ([`ANONYMOUS`]): its task is reached only by the id it was given, and never listed;
//! - a shutdown cancels the tasks still running at the end of its grace period like any call;
//!   each ends `cancelled`, says so in its `statusMessage`, and the shutdown counts them.

pub use super::settings::TaskLimits;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::capability::progress::Progress;
use toolhost_core::executor::Cancel;

/// The owner of the tasks of HTTP clients with neither a token nor a session (2026-07-28
/// requests without `[mcp] tokens`): nobody can be told apart, so such a task is reached only
/// by its id, which is drawn at random and told only to the client that started it, and
/// [`Tasks::list`] lists none of them.
pub const ANONYMOUS: &str = "anonymous";

/// How often a client is asked to poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;

/// The tasks of one server (every session of it).
#[derive(Debug)]
pub struct Tasks {
    limits: TaskLimits,
    inner: Mutex<HashMap<String, Entry>>,
    /// Tasks a shutdown cancelled.
    shutdown_cancelled: std::sync::atomic::AtomicUsize,
    /// Told whenever a task ends (`tasks/result` and `tasks/cancel` of 2025-11-25 wait on it).
    ended: tokio::sync::Notify,
}

#[derive(Debug)]
struct Entry {
    owner: String,
    task: Task,
    cancel: Cancel,
    progress: Option<Progress>,
    end: Option<(Instant, TaskPayload)>,
}

impl Entry {
    fn detailed(&self) -> DetailedTask {
        let mut task = self.task.clone();
        let payload = match &self.end {
            Some((_, p)) => p.clone(),
            None => TaskPayload::Working,
        };
        if self.end.is_none()
            && let Some(p) = &self.progress
        {
            task.status_message = Some(p.to_string());
        }
        DetailedTask::new(task, payload)
    }
}

/// How a task's call ended, as the task reports it.
pub enum Ended {
    /// The call has a result (a tool failure too: `isError: true`, still `completed`).
    Result(CallToolResult),
    /// The call was cancelled by its client (`tasks/cancel`); the text says so.
    Cancelled(String),
    /// A shutdown stopped the call (past its grace period, or before it was admitted): the
    /// task ends cancelled, counted among those the shutdown cancelled.
    Stopped(String),
    /// A protocol-level failure.
    Failed(ErrorData),
}

impl Tasks {
    pub fn new(limits: TaskLimits) -> Tasks {
        Tasks {
            limits,
            inner: Mutex::default(),
            shutdown_cancelled: Default::default(),
            ended: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start `run` as a task of `owner` (a call of `tool` that may run `timeout`), if the caps
    /// allow; `run` gets the task's cancellation and where its progress goes.
    pub fn start<F, Fut>(
        self: &Arc<Self>,
        owner: &str,
        tool: &str,
        timeout: Duration,
        run: F,
    ) -> Result<Task, ErrorData>
    where
        F: FnOnce(Cancel, Arc<dyn Fn(&Progress) + Send + Sync>) -> Fut,
        Fut: Future<Output = Ended> + Send + 'static,
    {
        let id = new_id()?;
        let now = rmcp::task_manager::current_timestamp();
        // The task lives at most its call's time limit, then its keep window.
        let ttl = (timeout + self.limits.keep).as_millis().min(u128::from(u64::MAX)) as u64;
        let task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(ttl)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message(format!("running `{tool}`"));
        let cancel = Cancel::new();
        {
            let mut tasks = self.lock();
            self.sweep(&mut tasks);
            let running = tasks.values().filter(|e| e.end.is_none());
            let (all, mine) = running.fold((0, 0), |(a, m), e| (a + 1, m + usize::from(e.owner == owner)));
            if mine >= self.limits.max_running_per_client {
                return Err(full(format!(
                    "this client already runs {mine} tasks, the most toolhost runs for one client at once \
                     ([mcp] tasks_max_running_per_client = {}); wait for one to finish or cancel one (tasks/cancel)",
                    self.limits.max_running_per_client
                )));
            }
            if all >= self.limits.max_running {
                return Err(full(format!(
                    "toolhost already runs {all} tasks, the most it runs at once ([mcp] tasks_max_running = {}); \
                     retry later",
                    self.limits.max_running
                )));
            }
            let entry = Entry {
                owner: owner.into(),
                task: task.clone(),
                cancel: cancel.clone(),
                progress: None,
                end: None,
            };
            tasks.insert(id.clone(), entry);
        }
        let me = Arc::downgrade(self);
        let pid = id.clone();
        let progress: Arc<dyn Fn(&Progress) + Send + Sync> = Arc::new(move |p: &Progress| {
            if let Some(t) = me.upgrade()
                && let Some(e) = t.lock().get_mut(&pid)
            {
                e.progress = Some(p.clone());
                e.task.last_updated_at = rmcp::task_manager::current_timestamp();
            }
        });
        let work = run(cancel, progress);
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let ended = work.await;
            if let Some(t) = me.upgrade() {
                t.finish(&id, ended);
            }
        });
        Ok(task)
    }

    fn finish(&self, id: &str, ended: Ended) {
        let mut tasks = self.lock();
        let Some(e) = tasks.get_mut(id) else { return };
        if e.end.is_some() {
            // Already marked cancelled by a 2025-11-25 `tasks/cancel`: it stays cancelled.
            return;
        }
        let (payload, message) = match ended {
            Ended::Result(r) => {
                let message = if r.is_error == Some(true) { "finished with an error" } else { "finished" };
                let result = match serde_json::to_value(&r) {
                    Ok(serde_json::Value::Object(o)) => o,
                    _ => JsonObject::new(),
                };
                (TaskPayload::Completed { result }, message.to_string())
            }
            Ended::Cancelled(why) => (TaskPayload::Cancelled, why),
            Ended::Stopped(why) => {
                self.shutdown_cancelled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                (TaskPayload::Cancelled, why)
            }
            Ended::Failed(err) => {
                let message = err.message.to_string();
                let error = match serde_json::to_value(&err) {
                    Ok(serde_json::Value::Object(o)) => o,
                    _ => JsonObject::new(),
                };
                (TaskPayload::Failed { error }, message)
            }
        };
        e.task.status = payload.status();
        e.task.status_message = Some(message);
        e.task.last_updated_at = rmcp::task_manager::current_timestamp();
        e.end = Some((Instant::now(), payload));
        drop(tasks);
        self.ended.notify_waiters();
    }

    /// `tasks/get` for `owner`.
    pub fn get(&self, owner: &str, id: &str) -> Result<GetTaskResult, ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = tasks.get(id).filter(|e| e.owner == owner).ok_or_else(|| unknown(id))?;
        let mut result = GetTaskResult::new(e.detailed());
        if let Some(p) = &e.progress
            && let Ok(v) = serde_json::to_value(p)
        {
            let mut m = serde_json::Map::new();
            m.insert("toolhost/progress".into(), v);
            result.meta = Some(rmcp::model::MetaObject(m));
        }
        Ok(result)
    }

    /// `tasks/cancel` for `owner`: the task's call is stopped; the task ends `cancelled` (a
    /// task that already ended stays as it ended).
    pub fn cancel(&self, owner: &str, id: &str) -> Result<(), ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = tasks.get(id).filter(|e| e.owner == owner).ok_or_else(|| unknown(id))?;
        e.cancel.cancel("the client (tasks/cancel)");
        Ok(())
    }

    /// `tasks/update` for `owner`: toolhost's tasks never ask for input, so there is nothing to
    /// deliver; the task must exist.
    pub fn update(&self, owner: &str, id: &str) -> Result<(), ErrorData> {
        let tasks = self.lock();
        tasks.get(id).filter(|e| e.owner == owner).map(drop).ok_or_else(|| unknown(id))
    }

    /// The task `id` of `owner`, with how it ended if it has.
    pub fn detailed(&self, owner: &str, id: &str) -> Result<DetailedTask, ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        tasks.get(id).filter(|e| e.owner == owner).map(Entry::detailed).ok_or_else(|| unknown(id))
    }

    /// Every task of `owner` still kept, the oldest first (none for [`ANONYMOUS`]).
    pub fn list(&self, owner: &str) -> Vec<DetailedTask> {
        if owner == ANONYMOUS {
            return Vec::new();
        }
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let mut mine: Vec<DetailedTask> =
            tasks.values().filter(|e| e.owner == owner).map(Entry::detailed).collect();
        mine.sort_by(|a, b| {
            (&a.task.created_at, &a.task.task_id).cmp(&(&b.task.created_at, &b.task.task_id))
        });
        mine
    }

    /// The task `id` of `owner` once it has ended (2025-11-25 `tasks/result` blocks until then).
    pub async fn ended(&self, owner: &str, id: &str) -> Result<DetailedTask, ErrorData> {
        loop {
            let notified = self.ended.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let task = self.detailed(owner, id)?;
            if task.status().is_terminal() {
                return Ok(task);
            }
            notified.await;
        }
    }

    /// 2025-11-25 `tasks/cancel` for `owner`: the task's call is stopped as `tasks/cancel`
    /// stops it on 2026-07-28, and the task is `cancelled` before this answers (that revision
    /// wants the status in the answer). A task that already ended cannot be cancelled.
    pub async fn cancel_now(&self, owner: &str, id: &str) -> Result<DetailedTask, ErrorData> {
        let task = self.detailed(owner, id)?;
        if task.status().is_terminal() {
            return Err(ErrorData::invalid_params(
                format!("cannot cancel task `{id}`: it already ended ({})", status_name(task.status())),
                None,
            ));
        }
        self.cancel(owner, id)?;
        // The sandbox stops within ~100 ms; its end says by whom it was cancelled.
        let _ = tokio::time::timeout(CANCEL_WAIT, self.ended(owner, id)).await;
        {
            let mut tasks = self.lock();
            if let Some(e) = tasks.get_mut(id)
                && e.end.is_none()
            {
                e.task.status = TaskStatus::Cancelled;
                e.task.status_message = Some("cancelled by the client (tasks/cancel)".into());
                e.task.last_updated_at = rmcp::task_manager::current_timestamp();
                e.end = Some((Instant::now(), TaskPayload::Cancelled));
            }
        }
        self.ended.notify_waiters();
        let task = self.detailed(owner, id)?;
        if task.status() != TaskStatus::Cancelled {
            return Err(ErrorData::invalid_params(
                format!("cannot cancel task `{id}`: it ended first ({})", status_name(task.status())),
                None,
            ));
        }
        Ok(task)
    }

    /// Tasks running now.
    pub fn running(&self) -> usize {
        self.lock().values().filter(|e| e.end.is_none()).count()
    }

    /// Tasks that ended `cancelled` because the host was shutting down, once every task still
    /// running has recorded its end (or `within` has passed): a cancelled call hands back its
    /// outcome before its task's bookkeeping runs, so right after the drain the count can lag.
    pub async fn cancelled_by_shutdown(&self, within: Duration) -> usize {
        let until = Instant::now() + within;
        while self.running() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.shutdown_cancelled.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Cancel every running task (`by` says why), e.g. when no service drains the calls.
    pub fn cancel_all(&self, by: &str) {
        for e in self.lock().values().filter(|e| e.end.is_none()) {
            e.cancel.cancel(by);
        }
    }

    /// Forget finished tasks past their keep window, and the oldest past the count cap.
    fn sweep(&self, tasks: &mut HashMap<String, Entry>) {
        tasks.retain(|_, e| e.end.as_ref().is_none_or(|(at, _)| at.elapsed() < self.limits.keep));
        let mut ended: Vec<(Instant, String)> =
            tasks.iter().filter_map(|(id, e)| e.end.as_ref().map(|(at, _)| (*at, id.clone()))).collect();
        if ended.len() > self.limits.max_kept {
            ended.sort();
            for (_, id) in &ended[..ended.len() - self.limits.max_kept] {
                tasks.remove(id);
            }
        }
    }
}

/// How long a 2025-11-25 `tasks/cancel` waits for the call to stop before it answers.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// A status as the wire spells it.
pub fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        _ => "unknown",
    }
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task `{id}` (it may have ended longer ago than it is kept)"),
        None,
    )
}

fn full(message: String) -> ErrorData {
    ErrorData::invalid_request(message, None)
}

/// 128 random bits, in hex.
fn new_id() -> Result<String, ErrorData> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| ErrorData::internal_error(format!("cannot draw a task id: {e}"), None))?;
    Ok(hex::encode(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    fn limits() -> TaskLimits {
        TaskLimits { max_running: 3, max_running_per_client: 2, keep: Duration::from_secs(60), max_kept: 2 }
    }

    fn start_pending(t: &Arc<Tasks>, owner: &str) -> Result<Task, ErrorData> {
        t.start(owner, "nap", Duration::from_secs(1), |cancel, _| async move {
            cancel.cancelled().await;
            Ended::Cancelled(format!("cancelled by {}", cancel.by()))
        })
    }

    #[tokio::test]
    async fn caps_per_client_and_in_all_refuse_with_the_setting_named() {
        let t = Arc::new(Tasks::new(limits()));
        let a1 = start_pending(&t, "a").unwrap();
        start_pending(&t, "a").unwrap();
        let e = start_pending(&t, "a").unwrap_err();
        assert!(e.message.contains("tasks_max_running_per_client = 2"), "{e:?}");
        start_pending(&t, "b").unwrap();
        let e = start_pending(&t, "c").unwrap_err();
        assert!(e.message.contains("tasks_max_running = 3"), "{e:?}");
        // Another client cannot see, or cancel, a's task.
        assert!(t.get("b", &a1.task_id).is_err() && t.cancel("b", &a1.task_id).is_err());
        t.cancel("a", &a1.task_id).unwrap();
        for _ in 0..100 {
            if t.running() == 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        let got = t.get("a", &a1.task_id).unwrap();
        assert_eq!(got.task.status(), TaskStatus::Cancelled);
        assert!(got.task.task.status_message.unwrap().contains("tasks/cancel"));
        start_pending(&t, "c").unwrap();
        t.cancel_all("the test");
    }

    #[tokio::test]
    async fn an_anonymous_task_is_reached_by_its_id_and_never_listed() {
        let t = Arc::new(Tasks::new(limits()));
        let task = start_pending(&t, ANONYMOUS).unwrap();
        start_pending(&t, "session:s1").unwrap();
        assert!(t.list(ANONYMOUS).is_empty(), "nobody can be told apart: nothing is listed");
        assert_eq!(t.list("session:s1").len(), 1);
        assert!(t.get(ANONYMOUS, &task.task_id).is_ok(), "the id it was given reaches it");
        assert!(t.get("session:s1", &task.task_id).is_err(), "a session does not reach it");
        t.cancel_all("the test");
    }

    #[tokio::test]
    async fn finished_tasks_keep_their_result_within_the_count_cap() {
        let t = Arc::new(Tasks::new(limits()));
        let mut ids = Vec::new();
        for i in 0..3 {
            let task = t
                .start("a", "echo", Duration::from_secs(1), move |_, progress| async move {
                    progress(&Progress { done: 1, total: Some(1), message: "done".into() });
                    Ended::Result(CallToolResult::success(vec![ContentBlock::text(format!("r{i}"))]))
                })
                .unwrap();
            ids.push(task.task_id);
            while t.running() > 0 {
                tokio::task::yield_now().await;
            }
        }
        assert!(t.get("a", &ids[0]).is_err(), "the oldest of three finished went (max_kept = 2)");
        let r = t.get("a", &ids[2]).unwrap();
        assert_eq!(r.task.status(), TaskStatus::Completed);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], "r2", "{v}");
        assert_eq!(v["_meta"]["toolhost/progress"]["done"], 1, "{v}");
    }
}
