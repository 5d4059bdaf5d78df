//! The state mapping on recorded API answers (testdata/: a Job and the PodList of its pods as
//! the API server returns them), and the Job bosun writes.

use super::*;
use k8s_openapi::List;

const NS: &str = "agents";
const NAME: &str = "bosun-01jv5q3zk8m4t6x2c9n7b1r0ad";

fn job(text: &str) -> Job {
    serde_json::from_str(text).expect("a recorded Job")
}

fn pods(text: &str) -> Vec<Pod> {
    let list: List<Pod> = serde_json::from_str(text).expect("a recorded PodList");
    list.items
}

const JOB_RUNNING: &str = include_str!("../testdata/job_running.json");
const PODS_RUNNING: &str = include_str!("../testdata/pods_running.json");

fn ended(seen: &JobSeen) -> &str {
    match &seen.phase {
        JobPhase::Ended(how) => how,
        other @ (JobPhase::Waiting | JobPhase::Running | JobPhase::Unknown) => {
            panic!("expected an end, got {other:?}")
        }
    }
}

#[test]
fn a_running_pod_is_running_on_its_node() {
    let s = seen(
        NS,
        NAME,
        Some(&job(JOB_RUNNING)),
        &pods(PODS_RUNNING),
        false,
    );
    assert_eq!(s.phase, JobPhase::Running);
    assert_eq!(s.node.as_deref(), Some("worker-2"));
}

#[test]
fn a_job_without_a_pod_or_with_an_unscheduled_one_waits() {
    let s = seen(NS, NAME, Some(&job(JOB_RUNNING)), &[], false);
    assert_eq!(s.phase, JobPhase::Waiting);
    assert_eq!(s.node, None);
    let s = seen(
        NS,
        NAME,
        Some(&job(JOB_RUNNING)),
        &pods(include_str!("../testdata/pods_unschedulable.json")),
        false,
    );
    assert_eq!(s.phase, JobPhase::Waiting);
    assert_eq!(s.node, None);
}

#[test]
fn reasons_in_plain_words() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            JOB_RUNNING,
            include_str!("../testdata/pods_image_pull_backoff.json"),
            &[
                "could not pull its image (ImagePullBackOff)",
                "registry.example/bosun-node:1",
                "kubernetes.image",
            ],
        ),
        (
            include_str!("../testdata/job_backoff_limit.json"),
            include_str!("../testdata/pods_evicted.json"),
            &[
                "on node worker-2 was evicted",
                "The node was low on resource: memory",
            ],
        ),
        (
            JOB_RUNNING,
            include_str!("../testdata/pods_node_lost.json"),
            &[
                "the node worker-2 was lost",
                "Taint manager: deleting due to NoExecute taint",
            ],
        ),
        (
            include_str!("../testdata/job_deadline_exceeded.json"),
            "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{},\"items\":[]}",
            &[
                "agents/bosun-01jv5q3zk8m4t6x2c9n7b1r0ad",
                "activeDeadlineSeconds",
                "Job was active longer than specified deadline",
            ],
        ),
        (
            include_str!("../testdata/job_backoff_limit.json"),
            include_str!("../testdata/pods_start_error.json"),
            &[
                "failed: the runner's container ended StartError with exit code 128",
                "no such file or directory",
                "is bosun-runner in the image at kubernetes.runner?",
            ],
        ),
        (
            include_str!("../testdata/job_backoff_limit.json"),
            include_str!("../testdata/pods_runner_failed.json"),
            &[
                "ended Error with exit code 1",
                "could not read the link file",
            ],
        ),
        (
            include_str!("../testdata/job_deleted.json"),
            PODS_RUNNING,
            &["on node worker-2 was deleted from outside bosun (kubectl delete)"],
        ),
    ];
    for (j, p, says) in cases {
        let s = seen(NS, NAME, Some(&job(j)), &pods(p), false);
        let how = ended(&s);
        for want in *says {
            assert!(how.contains(want), "{how:?} does not say {want:?}");
        }
        assert!(!how.contains('\n'), "one line: {how:?}");
    }
}

#[test]
fn a_job_that_is_gone_or_deleted_by_bosun() {
    let s = seen(NS, NAME, None, &[], false);
    assert!(
        ended(&s).contains("is gone: deleted from outside bosun"),
        "{s:?}"
    );
    let s = seen(
        NS,
        NAME,
        Some(&job(include_str!("../testdata/job_deleted.json"))),
        &pods(PODS_RUNNING),
        true,
    );
    assert!(ended(&s).contains("was deleted by bosun"), "{s:?}");
}

fn config() -> KubernetesConfig {
    toml::from_str(
        r#"
image = "registry.example/bosun-node:1"
runner = "/opt/bosun/bin/bosun-runner"
shared_dir = "/shared/bosun"
mount = "/shared"
claim = "bosun-shared"
"#,
    )
    .expect("config")
}

#[test]
fn the_job_bosun_writes() {
    let run: RunId = "01JV5Q3ZK8M4T6X2C9N7B1R0AD".parse().expect("run id");
    let dir = PathBuf::from("/shared/bosun/runs/01JV5Q3ZK8M4T6X2C9N7B1R0AD");
    let req = JobRequest {
        run,
        namespace: NS,
        dir: &dir,
        time_cap_ms: Some(3_600_000),
        ladder_ms: 15_000,
        run_as_user: 1000,
        run_as_group: 1000,
    };
    let job = job_spec(&config(), &req);
    let v = serde_json::to_value(&job).expect("json");
    assert_eq!(v["metadata"]["name"], NAME);
    assert!(NAME.len() <= 63);
    assert_eq!(v["metadata"]["labels"][RUN_LABEL], run.to_string());
    let spec = &v["spec"];
    assert_eq!(spec["backoffLimit"], 0);
    // The cap, the ladder and a minute.
    assert_eq!(spec["activeDeadlineSeconds"], 3600 + 15 + 60);
    assert_eq!(spec["ttlSecondsAfterFinished"], 600);
    let pod = &spec["template"]["spec"];
    assert_eq!(
        spec["template"]["metadata"]["labels"][RUN_LABEL],
        run.to_string()
    );
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["terminationGracePeriodSeconds"], 25);
    assert_eq!(pod["automountServiceAccountToken"], false);
    let c = &pod["containers"][0];
    assert_eq!(
        c["command"],
        serde_json::json!([
            "/opt/bosun/bin/bosun-runner",
            "--remote",
            "/shared/bosun/runs/01JV5Q3ZK8M4T6X2C9N7B1R0AD/link.json"
        ])
    );
    assert!(c.get("env").is_none(), "no environment: {c}");
    assert!(c.get("args").is_none());
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/shared");
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "bosun-shared"
    );
    assert!(v["metadata"].get("annotations").is_none());
    // The same as the recorded Job's spec in the parts bosun sets.
    let recorded: serde_json::Value = serde_json::from_str(JOB_RUNNING).expect("json");
    assert_eq!(
        c["command"],
        recorded["spec"]["template"]["spec"]["containers"][0]["command"]
    );
    // Without a time cap there is no deadline.
    let job = job_spec(
        &config(),
        &JobRequest {
            time_cap_ms: None,
            ..req
        },
    );
    assert!(
        job.spec
            .as_ref()
            .and_then(|s| s.active_deadline_seconds)
            .is_none()
    );
}

#[test]
fn config_mistakes_are_named() {
    let base = config();
    let mut c = base.clone();
    c.claim = None;
    assert!(
        c.check()
            .expect_err("no volume")
            .to_string()
            .contains("claim = ")
    );
    let mut c = base.clone();
    c.host_path = Some("/shared".into());
    assert!(c.check().expect_err("both").to_string().contains("both"));
    let mut c = base.clone();
    c.mount = Some("/elsewhere".into());
    assert!(
        c.check()
            .expect_err("mount")
            .to_string()
            .contains("must be an absolute path that holds")
    );
    let mut c = base.clone();
    c.claim = Some("Bad_Name".into());
    assert!(
        c.check()
            .expect_err("claim")
            .to_string()
            .contains("not a PersistentVolumeClaim name")
    );
    assert!(base.check().is_ok());
}
