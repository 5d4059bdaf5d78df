//! A small fake Kubernetes API server for the Kubernetes placement tests: HTTPS on 127.0.0.1
//! with a CA of the test's own, a bearer token, and the endpoints bosund's kube-rs client calls
//! — create, get, list (by label, in a namespace or in all) and delete of Jobs
//! (`/apis/batch/v1/...`), and the list of pods by label (`/api/v1/namespaces/{ns}/pods`).
//! Answers are shaped as the real API server's: the object itself, a `JobList`/`PodList`, or a
//! `Status` for 401, 403, 404 and 409.
//!
//! It keeps every Job it was given (and every request) so a test can read the spec, and it
//! starts no pod by itself: the test plays the kubelet, with [`FakeKube::set_pod`] and
//! [`FakeKube::finish_delete`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Context;
use base64::Engine as _;
use serde_json::{Value, json};

use crate::http::{self, Request, Response};

/// The bearer token of the kubeconfig; any other is answered 401.
const TOKEN: &str = "fake-kube-token";

#[derive(Default)]
struct State {
    /// (namespace, name) → the Job as stored.
    jobs: BTreeMap<(String, String), Value>,
    /// (namespace, name) → the pod as stored.
    pods: BTreeMap<(String, String), Value>,
    /// Every request: method, target, body.
    requests: Vec<(String, String, String)>,
    /// Namespaces in which creating a Job is forbidden (403).
    forbidden: Vec<String>,
    version: u64,
}

impl State {
    fn next_version(&mut self) -> String {
        self.version += 1;
        (48_000 + self.version).to_string()
    }
}

pub struct FakeKube {
    state: Arc<Mutex<State>>,
    port: u16,
    dir: tempfile::TempDir,
}

impl FakeKube {
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("bt-kube-")
            .tempdir_in("/tmp")?;
        let tls = http::TestTls::new("fake kubernetes CA")?;
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        let port = http::serve_https(&tls, "fake-kube", move |req| answer(&st, req))?;
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority-data: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: bosun\n    namespace: default\ncurrent-context: fake\nusers:\n- name: bosun\n  user:\n    token: {TOKEN}\n",
            base64::engine::general_purpose::STANDARD.encode(&tls.ca_pem)
        );
        std::fs::write(dir.path().join("kubeconfig"), kubeconfig)?;
        Ok(Self { state, port, dir })
    }

    /// A kubeconfig that points at this server.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every Job it holds: (namespace, name, the Job).
    pub fn jobs(&self) -> Vec<(String, String, Value)> {
        self.lock()
            .jobs
            .iter()
            .map(|((ns, n), j)| (ns.clone(), n.clone(), j.clone()))
            .collect()
    }

    pub fn job(&self, namespace: &str, name: &str) -> Option<Value> {
        self.lock()
            .jobs
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Every request so far: method, target (path and query), body.
    pub fn requests(&self) -> Vec<(String, String, String)> {
        self.lock().requests.clone()
    }

    /// Creating a Job in `namespace` is answered 403 from now on.
    pub fn forbid(&self, namespace: &str) {
        self.lock().forbidden.push(namespace.to_string());
    }

    /// Sets the pod of a Job: `node` (its `spec.nodeName`) and `status` (the pod's status, as
    /// the kubelet reports it). The pod's labels and spec come from the Job's template.
    pub fn set_pod(&self, namespace: &str, job: &str, node: Option<&str>, status: Value) {
        let mut st = self.lock();
        let Some(j) = st
            .jobs
            .get(&(namespace.to_string(), job.to_string()))
            .cloned()
        else {
            return;
        };
        let name = format!("{job}-x7k2p");
        let version = st.next_version();
        let key = (namespace.to_string(), name.clone());
        let mut spec = j["spec"]["template"]["spec"].clone();
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        let mut labels = j["spec"]["template"]["metadata"]["labels"].clone();
        labels["batch.kubernetes.io/job-name"] = json!(job);
        labels["job-name"] = json!(job);
        let created = st
            .pods
            .get(&key)
            .map(|p| p["metadata"]["creationTimestamp"].clone())
            .unwrap_or_else(|| json!(now()));
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "generateName": format!("{job}-"),
                "namespace": namespace,
                "uid": format!("pod-uid-{version}"),
                "resourceVersion": version,
                "creationTimestamp": created,
                "labels": labels,
                "ownerReferences": [{
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": j["metadata"]["uid"],
                    "controller": true,
                    "blockOwnerDeletion": true
                }],
                "finalizers": ["batch.kubernetes.io/job-tracking"]
            },
            "spec": spec,
            "status": status,
        });
        st.pods.insert(key, pod);
        // The Job controller's count.
        let phase = st.pods.values().find_map(|p| {
            (p["metadata"]["labels"]["job-name"] == json!(job))
                .then(|| p["status"]["phase"].as_str().unwrap_or("").to_string())
        });
        if let Some(j) = st.jobs.get_mut(&(namespace.to_string(), job.to_string())) {
            match phase.as_deref() {
                Some("Running") => {
                    j["status"]["active"] = json!(1);
                    j["status"]["ready"] = json!(1);
                }
                Some("Succeeded") => {
                    j["status"] = json!({
                        "succeeded": 1, "ready": 0, "terminating": 0,
                        "startTime": j["status"]["startTime"],
                        "completionTime": now(),
                        "uncountedTerminatedPods": {},
                        "conditions": [
                            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": now(), "lastTransitionTime": now()},
                            {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": now(), "lastTransitionTime": now()}
                        ]
                    });
                }
                Some("Failed") => {
                    j["status"] = json!({
                        "failed": 1, "ready": 0, "terminating": 0,
                        "startTime": j["status"]["startTime"],
                        "uncountedTerminatedPods": {},
                        "conditions": [
                            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastProbeTime": now(), "lastTransitionTime": now()},
                            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastProbeTime": now(), "lastTransitionTime": now()}
                        ]
                    });
                }
                Some(_) | None => {}
            }
            j["metadata"]["resourceVersion"] = json!(version);
        }
    }

    /// Replaces a Job's status (what the Job controller would write).
    pub fn set_job_status(&self, namespace: &str, name: &str, status: Value) {
        let mut st = self.lock();
        let version = st.next_version();
        if let Some(j) = st.jobs.get_mut(&(namespace.to_string(), name.to_string())) {
            j["status"] = status;
            j["metadata"]["resourceVersion"] = json!(version);
        }
    }

    /// Deletes a Job from outside bosun, as `kubectl delete job --cascade=foreground` does:
    /// the Job is marked for deletion and stays until [`FakeKube::finish_delete`].
    pub fn delete_from_outside(&self, namespace: &str, name: &str) {
        let mut st = self.lock();
        mark_deleted(&mut st, namespace, name);
    }

    /// Ends a deletion: the Job and its pods are gone.
    pub fn finish_delete(&self, namespace: &str, name: &str) {
        let mut st = self.lock();
        st.jobs.remove(&(namespace.to_string(), name.to_string()));
        st.pods.retain(|(ns, _), p| {
            !(ns == namespace && p["metadata"]["labels"]["job-name"] == json!(name))
        });
    }
}

fn now() -> String {
    // RFC 3339 in UTC, to the second, as the API server writes times.
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn mark_deleted(st: &mut State, namespace: &str, name: &str) -> Option<Value> {
    let version = st.next_version();
    let j = st
        .jobs
        .get_mut(&(namespace.to_string(), name.to_string()))?;
    if j["metadata"].get("deletionTimestamp").is_none() {
        j["metadata"]["deletionTimestamp"] = json!(now());
        j["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        j["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        j["metadata"]["resourceVersion"] = json!(version);
    }
    Some(j.clone())
}

/// A `Status` answer, as the API server writes one.
fn status(code: u16, reason: &str, message: String, details: Value) -> Response {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if !details.is_null() {
        body["details"] = details;
    }
    Response::json(code, &body)
}

fn not_found(kind: &str, group: &str, name: &str) -> Response {
    let what = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    status(
        404,
        "NotFound",
        format!("{what} \"{name}\" not found"),
        json!({"name": name, "group": group, "kind": kind}),
    )
}

/// Whether an object's labels match a selector of `k=v` and `k` terms.
fn matches(selector: Option<&str>, labels: &Value) -> bool {
    let Some(sel) = selector else {
        return true;
    };
    sel.split(',')
        .filter(|t| !t.is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => labels[k.trim_end_matches('=')] == json!(v),
            None => labels.get(term).is_some(),
        })
}

fn list(kind: &str, api_version: &str, items: Vec<Value>, version: u64) -> Response {
    Response::json(
        200,
        &json!({
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": (48_000 + version).to_string()},
            "items": items,
        }),
    )
}

/// The API server's answer to one request, recorded first; a wrong token gets a 401.
fn answer(st: &Arc<Mutex<State>>, req: &Request) -> Response {
    let mut st = st.lock().unwrap_or_else(|p| p.into_inner());
    st.requests.push((
        req.method.clone(),
        req.target.clone(),
        String::from_utf8_lossy(&req.body).to_string(),
    ));
    if req.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
        return status(401, "Unauthorized", "Unauthorized".into(), Value::Null);
    }
    let selector = req.query_param("labelSelector");
    let selector = selector.as_deref();
    let parts: Vec<&str> = req.path().trim_matches('/').split('/').collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("GET", ["apis", "batch", "v1", "jobs"]) => {
            let items = select(&st.jobs, None, selector);
            list("JobList", "batch/v1", items, st.version)
        }
        ("GET", ["apis", "batch", "v1", "namespaces", ns, "jobs"]) => {
            let items = select(&st.jobs, Some(*ns), selector);
            list("JobList", "batch/v1", items, st.version)
        }
        ("POST", ["apis", "batch", "v1", "namespaces", ns, "jobs"]) => {
            create_job(&mut st, ns, &req.body)
        }
        ("GET", ["apis", "batch", "v1", "namespaces", ns, "jobs", name]) => {
            match st.jobs.get(&(ns.to_string(), name.to_string())) {
                Some(j) => Response::json(200, j),
                None => not_found("jobs", "batch", name),
            }
        }
        ("DELETE", ["apis", "batch", "v1", "namespaces", ns, "jobs", name]) => {
            match mark_deleted(&mut st, ns, name) {
                Some(j) => Response::json(200, &j),
                None => not_found("jobs", "batch", name),
            }
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods"]) => {
            let items = select(&st.pods, Some(*ns), selector);
            list("PodList", "v1", items, st.version)
        }
        _ => status(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        ),
    }
}

/// The objects in namespace `ns` (in any, for `None`) whose labels match `selector`.
fn select(
    objects: &BTreeMap<(String, String), Value>,
    ns: Option<&str>,
    selector: Option<&str>,
) -> Vec<Value> {
    objects
        .iter()
        .filter(|((n, _), o)| {
            ns.is_none_or(|ns| n == ns) && matches(selector, &o["metadata"]["labels"])
        })
        .map(|(_, o)| o.clone())
        .collect()
}

/// Creates a Job in `ns` from the request's body: 201 and the Job as stored, or the `Status`
/// of a body that is not JSON (400), a forbidden namespace (403) or a name taken (409).
fn create_job(st: &mut State, ns: &str, body: &[u8]) -> Response {
    let Ok(mut job) = serde_json::from_slice::<Value>(body) else {
        return status(
            400,
            "BadRequest",
            "the body of the request was in an unknown format".into(),
            Value::Null,
        );
    };
    let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
    if st.forbidden.iter().any(|f| f == ns) {
        return status(
            403,
            "Forbidden",
            format!(
                "jobs.batch is forbidden: User \"system:serviceaccount:bosun:bosund\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"{ns}\""
            ),
            json!({"group": "batch", "kind": "jobs"}),
        );
    }
    let key = (ns.to_string(), name.clone());
    if st.jobs.contains_key(&key) {
        return status(
            409,
            "AlreadyExists",
            format!("jobs.batch \"{name}\" already exists"),
            json!({"name": name, "group": "batch", "kind": "jobs"}),
        );
    }
    let version = st.next_version();
    admit_job(&mut job, ns, &version);
    st.jobs.insert(key, job.clone());
    Response::json(201, &job)
}

/// Fills in a new Job what the API server defaults and the Job controller adds: its metadata
/// (namespace, uid, `version`, creation time), the spec's defaults and selector, and a status.
fn admit_job(job: &mut Value, ns: &str, version: &str) {
    let uid = format!("3f6a2c1e-8d4b-4f0a-9c7e-{:012}", version);
    job["apiVersion"] = json!("batch/v1");
    job["kind"] = json!("Job");
    job["metadata"]["namespace"] = json!(ns);
    job["metadata"]["uid"] = json!(uid);
    job["metadata"]["resourceVersion"] = json!(version);
    job["metadata"]["generation"] = json!(1);
    job["metadata"]["creationTimestamp"] = json!(now());
    let spec = &mut job["spec"];
    spec["completions"] = json!(1);
    spec["parallelism"] = json!(1);
    spec["completionMode"] = json!("NonIndexed");
    spec["suspend"] = json!(false);
    spec["manualSelector"] = json!(false);
    spec["podReplacementPolicy"] = json!("TerminatingOrFailed");
    spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
    spec["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = json!(uid);
    job["status"] = json!({"startTime": now(), "active": 0, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}});
}

/// The status of a running pod on `node`.
pub fn pod_running() -> Value {
    json!({
        "phase": "Running",
        "hostIP": "10.0.0.12",
        "podIP": "10.244.2.17",
        "podIPs": [{"ip": "10.244.2.17"}],
        "qosClass": "BestEffort",
        "startTime": now(),
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now()},
            {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": now()}
        ],
        "containerStatuses": [{
            "name": "bosun-runner", "ready": true, "started": true, "restartCount": 0,
            "image": "registry.example/bosun-node:1", "imageID": "registry.example/bosun-node@sha256:4c1e",
            "containerID": "containerd://9b1f0e6a", "lastState": {},
            "state": {"running": {"startedAt": now()}}
        }]
    })
}

/// The status of a pod whose runner exited with `code`.
pub fn pod_ended(code: i32) -> Value {
    let (phase, reason) = if code == 0 {
        ("Succeeded", "Completed")
    } else {
        ("Failed", "Error")
    };
    json!({
        "phase": phase,
        "hostIP": "10.0.0.12",
        "qosClass": "BestEffort",
        "startTime": now(),
        "containerStatuses": [{
            "name": "bosun-runner", "ready": false, "started": false, "restartCount": 0,
            "image": "registry.example/bosun-node:1", "imageID": "registry.example/bosun-node@sha256:4c1e",
            "containerID": "containerd://9b1f0e6a", "lastState": {},
            "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": now(), "finishedAt": now()}}
        }]
    })
}

/// The status of a pod the kubelet evicted for memory pressure.
pub fn pod_evicted() -> Value {
    json!({
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91236Ki. ",
        "hostIP": "10.0.0.12",
        "qosClass": "BestEffort",
        "startTime": now(),
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91236Ki. ", "lastProbeTime": null, "lastTransitionTime": now()}
        ],
        "containerStatuses": [{
            "name": "bosun-runner", "ready": false, "started": false, "restartCount": 0,
            "image": "registry.example/bosun-node:1", "imageID": "registry.example/bosun-node@sha256:4c1e",
            "containerID": "containerd://9b1f0e6a", "lastState": {},
            "state": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": now(), "finishedAt": now()}}
        }]
    })
}

/// The status of a pod whose image cannot be pulled.
pub fn pod_image_pull_backoff(image: &str) -> Value {
    json!({
        "phase": "Pending",
        "hostIP": "10.0.0.12",
        "qosClass": "BestEffort",
        "startTime": now(),
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [bosun-runner]", "lastProbeTime": null, "lastTransitionTime": now()}
        ],
        "containerStatuses": [{
            "name": "bosun-runner", "ready": false, "started": false, "restartCount": 0,
            "image": image, "imageID": "", "lastState": {},
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": format!("Back-off pulling image \"{image}\"")}}
        }]
    })
}

/// Reads what a kube client would: the label value a Job was made for.
pub fn run_of(job: &Value) -> anyhow::Result<String> {
    job["metadata"]["labels"]["bosun.dev/run"]
        .as_str()
        .map(str::to_string)
        .context("a Job without the bosun.dev/run label")
}
