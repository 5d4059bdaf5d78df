//! The socket protocol under bad input: a malformed frame, an oversized frame, a wrong protocol
//! version and a runner with a wrong token each get a clear error, and the daemon keeps serving
//! everyone else. Durations out of their range are refused over the wire and on the command line;
//! an edit of an agent or a server clears a field with an empty value or a zero, and no other way.

use std::time::Duration;

use bosun_protocol::agents::EditAgentParams;
use bosun_protocol::board::EditCardParams;
use bosun_protocol::mcp::EditServerParams;
use bosun_protocol::runner::StopLadder;
use bosun_protocol::socket::{self, ReadHalf, WriteHalf};
use bosun_protocol::ui::{
    ClientFrame, Request, Response, ResponseResult, ServerFrame, StartRunParams,
};
use bosun_protocol::{
    ErrorCode, FrameReader, FrameWriter, Hello, HelloReply, PROTOCOL_VERSION, Role, WireError,
};
use bosun_shared::placement::Placement;
use bosun_shared::{RunId, RunToken};
use bosun_tests::Bosun;
use tokio::io::AsyncWriteExt;

async fn connect(b: &Bosun) -> anyhow::Result<(FrameReader<ReadHalf>, FrameWriter<WriteHalf>)> {
    let (r, w) = socket::split(socket::connect(&b.home.join("bosund.sock")).await?);
    Ok((FrameReader::new(r), FrameWriter::new(w)))
}

async fn hello(
    b: &Bosun,
    version: u32,
    role: Role,
) -> anyhow::Result<(HelloReply, FrameReader<ReadHalf>, FrameWriter<WriteHalf>)> {
    let (mut r, mut w) = connect(b).await?;
    w.send_now(&Hello {
        protocol_version: version,
        role,
        // As a UI of before binary frames: its log events come as JSON.
        binary_log: false,
        client: Default::default(),
    })
    .await?;
    let reply = r
        .read::<HelloReply>()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no hello reply"))?;
    Ok((reply, r, w))
}

async fn status_works(
    r: &mut FrameReader<ReadHalf>,
    w: &mut FrameWriter<WriteHalf>,
    id: u64,
) -> anyhow::Result<()> {
    w.send_now(&ClientFrame::Request {
        id,
        body: Request::DaemonStatus,
    })
    .await?;
    match r.read::<ServerFrame>().await? {
        Some(ServerFrame::Response {
            id: rid,
            result: ResponseResult::Ok(Response::Status(_)),
        }) if rid == id => Ok(()),
        other => anyhow::bail!("expected a status answer, got {other:?}"),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

#[test]
fn bad_frames_get_clear_errors_and_the_daemon_serves_others() -> anyhow::Result<()> {
    let b = Bosun::new("proto_bad_frames");
    b.ok(&["ps"])?;
    runtime()?.block_on(async {
        // A bystander, connected before the trouble, served after it.
        let (reply, mut br, mut bw) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        assert!(matches!(reply, HelloReply::Welcome(_)));

        // Malformed: valid length, not a request. Answered; the connection goes on.
        let (_, mut r, mut w) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        w.send_encoded(&[0, 0, 0, 9]).await?;
        w.send_encoded(b"{\"nope\":1").await?;
        w.flush().await?;
        match r.read::<ServerFrame>().await? {
            Some(ServerFrame::Error(e)) => {
                assert_eq!(e.code, ErrorCode::BadFrame);
                assert!(e.message.starts_with("a frame was not a valid request and was ignored"), "{}", e.message);
            }
            other => anyhow::bail!("expected an error for a malformed frame, got {other:?}"),
        }
        status_works(&mut r, &mut w, 2).await?;

        // Oversized: refused before its body is read, and the connection is closed.
        let (_, mut r2, mut w2) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        w2.send_encoded(&(64u32 * 1024 * 1024).to_be_bytes()).await?;
        w2.flush().await?;
        match r2.read::<ServerFrame>().await? {
            Some(ServerFrame::Error(e)) => {
                assert_eq!(e.code, ErrorCode::FrameTooLarge);
                assert_eq!(e.message, "a frame of 67108864 bytes is over the limit of 4194304 bytes; the connection is closed");
            }
            other => anyhow::bail!("expected an error for an oversized frame, got {other:?}"),
        }
        let closed = tokio::time::timeout(Duration::from_secs(5), r2.read::<ServerFrame>()).await?;
        assert!(matches!(closed, Ok(None) | Err(_)), "the connection is closed: {closed:?}");

        // Garbage instead of a hello.
        let (mut r3, mut w3) = connect(&b).await?;
        w3.send_encoded(&[0, 0, 0, 2]).await?;
        w3.send_encoded(b"hi").await?;
        w3.flush().await?;
        match r3.read::<HelloReply>().await? {
            Some(HelloReply::Refused(e)) => {
                assert_eq!(e.code, ErrorCode::BadFrame);
                assert!(e.message.starts_with("the first frame must be a hello"), "{}", e.message);
            }
            other => anyhow::bail!("expected a refusal, got {other:?}"),
        }
        // A client closing mid-frame harms nobody.
        let (_, _r4, mut w4) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        w4.send_encoded(&[0, 0, 1, 0, b'{']).await?;
        w4.flush().await?;
        drop(w4);

        status_works(&mut br, &mut bw, 7).await?;
        let _ = bw.flush().await;
        let mut raw = socket::connect(&b.home.join("bosund.sock")).await?;
        raw.shutdown().await.ok();
        anyhow::Ok(())
    })?;
    b.ok(&["ps"])?;
    b.finish()
}

#[test]
fn a_ui_of_before_binary_frames_gets_its_log_events_as_json() -> anyhow::Result<()> {
    let b = Bosun::new("proto_old_ui_log");
    let run = b.start(&[], &["/bin/sh", "-c", "printf 'one\ntwo\n'"])?;
    b.wait_ended(&run, Duration::from_secs(30))?;
    runtime()?.block_on(async {
        let (reply, mut r, mut w) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        anyhow::ensure!(matches!(reply, HelloReply::Welcome(_)), "{reply:?}");
        w.send_now(&ClientFrame::Request {
            id: 1,
            body: Request::FollowLog(bosun_protocol::ui::FollowParams {
                run: run.clone(),
                from_seq: 1,
                follow: false,
                stream: None,
                direct: false,
            }),
        })
        .await?;
        let mut text = Vec::new();
        loop {
            let body = r
                .read_raw()
                .await?
                .ok_or_else(|| anyhow::anyhow!("closed"))?
                .to_vec();
            assert_eq!(body.first(), Some(&b'{'), "every frame is JSON");
            match bosun_protocol::frame::decode_body::<ServerFrame>(&body)? {
                ServerFrame::Event(bosun_protocol::ui::Event::Log { data, .. }) => {
                    text.extend_from_slice(data.as_slice())
                }
                ServerFrame::Event(bosun_protocol::ui::Event::LogEnd { .. }) => break,
                ServerFrame::Response { .. } | ServerFrame::Event(_) | ServerFrame::Error(_) => {}
            }
        }
        assert_eq!(text, b"one\ntwo\n");
        anyhow::Ok(())
    })?;
    b.finish()
}

#[test]
fn a_client_of_another_protocol_version_is_told_so() -> anyhow::Result<()> {
    let b = Bosun::new("proto_version");
    b.ok(&["ps"])?;
    runtime()?.block_on(async {
        let (reply, _, _) = hello(&b, PROTOCOL_VERSION + 1, Role::Ui).await?;
        match reply {
            HelloReply::Refused(e) => {
                assert_eq!(e.code, ErrorCode::ProtocolVersion);
                assert!(
                    e.message.starts_with(&format!(
                        "this bosund speaks protocol {PROTOCOL_VERSION} and the client speaks protocol {}",
                        PROTOCOL_VERSION + 1
                    )),
                    "{}",
                    e.message
                );
            }
            HelloReply::Welcome(_) => anyhow::bail!("a client of another version was welcomed"),
        }
        anyhow::Ok(())
    })?;
    b.ok(&["ps"])?;
    b.finish()
}

/// An answer too large for one frame (4 MiB): every run at once (`list_runs` without `page`, as
/// clients from before pages ask) over forty runs with an argument of 120 KB each. The client
/// is told so at once instead of waiting for ever, and the same connection's session goes on:
/// the next request is answered. `ps --all`, which asks by pages, lists them all.
#[test]
fn an_answer_too_large_for_one_frame_is_an_error_and_the_session_goes_on() -> anyhow::Result<()> {
    let b = Bosun::new("proto_answer_too_large");
    let big = "a".repeat(120_000);
    for _ in 0..40 {
        b.ok(&["run", "--", "true", &big])?;
    }
    runtime()?.block_on(async {
        let (reply, mut r, mut w) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        anyhow::ensure!(matches!(reply, HelloReply::Welcome(_)), "{reply:?}");
        for (id, all) in [(1, true), (2, false)] {
            let req = ClientFrame::Request {
                id,
                body: Request::ListRuns(bosun_protocol::runs::ListRuns { all, page: None }),
            };
            w.send_now(&req).await?;
            let frame: ServerFrame = r.read().await?.ok_or_else(|| anyhow::anyhow!("closed"))?;
            match (id, frame) {
                (
                    1,
                    ServerFrame::Response {
                        id: 1,
                        result: ResponseResult::Err(e),
                    },
                ) => {
                    assert_eq!(e.code, ErrorCode::Internal, "{e:?}");
                    assert!(
                        e.message.contains("more than the 4194304")
                            && e.message.contains("ask for less at a time"),
                        "{e:?}"
                    );
                }
                (
                    2,
                    ServerFrame::Response {
                        id: 2,
                        result: ResponseResult::Ok(_),
                    },
                ) => {}
                (_, other) => anyhow::bail!("request {id} was answered with {other:?}"),
            }
        }
        anyhow::Ok(())
    })?;
    // The CLI asks by pages, so the same history lists whole.
    let runs: Vec<serde_json::Value> = serde_json::from_str(&b.ok(&["ps", "--all", "--json"])?)?;
    assert_eq!(runs.len(), 40);
    b.finish()
}

#[test]
fn a_runner_with_a_wrong_token_or_an_unknown_run_is_refused() -> anyhow::Result<()> {
    let b = Bosun::new("proto_runner_token");
    let id = b.start(&[], &["sleep", "30"])?;
    b.wait_run(&id, "the run to start", Duration::from_secs(20), |v| {
        v["state"] == "running"
    })?;
    let run_id: RunId = id.parse()?;
    runtime()?.block_on(async {
        let (reply, _, _) = hello(
            &b,
            PROTOCOL_VERSION,
            Role::Runner {
                run_id,
                token: RunToken::generate(),
                keeps_unsaved: false,
            },
        )
        .await?;
        match reply {
            HelloReply::Refused(e) => {
                assert_eq!(e.code, ErrorCode::Unauthorized);
                assert_eq!(e.message, format!("the token for run {id} is wrong"));
            }
            HelloReply::Welcome(_) => anyhow::bail!("a wrong token was accepted"),
        }
        let other = RunId::new();
        let (reply, _, _) = hello(
            &b,
            PROTOCOL_VERSION,
            Role::Runner {
                run_id: other,
                token: RunToken::generate(),
                keeps_unsaved: false,
            },
        )
        .await?;
        assert!(matches!(reply, HelloReply::Refused(e) if e.code == ErrorCode::NotFound));
        anyhow::Ok(())
    })?;
    // The real runner is undisturbed.
    assert_eq!(b.show(&id)?["state"], "running");
    b.ok(&["stop", &id])?;
    b.wait_ended(&id, Duration::from_secs(20))?;
    b.finish()
}

/// Only meaningful as root, which can open the socket to another user for the test: the
/// daemon must then refuse that user by its peer credentials, not by file permissions alone.
#[test]
fn a_connection_from_another_user_is_refused_and_logged() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::getuid().is_root() {
        // Without root there is no second user to connect as; the file permissions (checked in
        // daemon_lifecycle) are then what keeps other users out.
        return Ok(());
    }
    let b = Bosun::new("proto_other_uid");
    b.ok(&["ps"])?;
    let socket = b.home.join("bosund.sock");
    // Open the way for the test only: the directories and the socket.
    for dir in [b.home.parent().unwrap_or(&b.home), &b.home] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777))?;
    let script = r#"
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
body = json.dumps({"protocol_version": 1, "role": {"kind": "ui"}}).encode()
s.sendall(struct.pack(">I", len(body)) + body)
n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
print(s.recv(n, socket.MSG_WAITALL).decode())
"#;
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            script,
        ])
        .arg(&socket)
        .output()?;
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| anyhow::anyhow!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    assert_eq!(reply["type"], "refused", "{reply}");
    assert_eq!(reply["code"], "unauthorized", "{reply}");
    assert_eq!(
        reply["message"],
        "this bosund belongs to another user; connections from uid 65534 are refused"
    );
    let log = std::fs::read_to_string(b.home.join("bosund.log"))?;
    assert!(
        log.contains("refused a connection from another user uid=65534"),
        "{log}"
    );
    b.ok(&["ps"])?;
    b.finish()
}

/// Issue 25: the protocol took a time cap and a stop grace of `u64::MAX` milliseconds (a program
/// that ignores SIGINT was then never escalated), and `--time-cap 18446744073709552s` wrapped to
/// 384 ms. Out-of-range values are refused where they come in, in the rule's words: by bosund
/// over the wire, and by the command line before anything is sent.
#[test]
fn durations_out_of_range_are_refused_on_the_wire_and_on_the_command_line() -> anyhow::Result<()> {
    let b = Bosun::new("proto_durations");
    b.ok(&["ps"])?;
    let start = |time_cap_ms: Option<u64>, grace_ms: u64| {
        Request::from(StartRunParams {
            name: None,
            program: "true".into(),
            args: Vec::new(),
            cwd: b.scratch(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            time_cap_ms,
            ladder: Some(StopLadder {
                int_grace_ms: grace_ms,
                term_grace_ms: 5_000,
            }),
            umask: None,
            max_output: None,
            placement: Placement::Local,
        })
    };
    let cases = [
        (
            start(Some(u64::MAX), 5_000),
            "a time cap can be a week at most",
        ),
        (
            start(Some(8 * 24 * 3600 * 1000), 5_000),
            "a time cap can be a week at most",
        ),
        (start(Some(0), 5_000), "a time cap must be longer than zero"),
        (start(None, u64::MAX), "a stop grace can be an hour at most"),
    ];
    runtime()?.block_on(async {
        let (_, mut r, mut w) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        for (id, (body, want)) in (1u64..).zip(cases) {
            w.send_now(&ClientFrame::Request { id, body }).await?;
            match r.read::<ServerFrame>().await? {
                Some(ServerFrame::Response {
                    result: ResponseResult::Err(e),
                    ..
                }) => {
                    assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
                    assert!(e.message.contains(want), "{want}: {}", e.message);
                }
                other => anyhow::bail!("expected {want}, got {other:?}"),
            }
        }
        anyhow::Ok(())
    })?;
    assert!(b.run_ids().is_empty(), "no run was made");
    for (flags, want) in [
        (
            ["--time-cap", "18446744073709552s"],
            "--time-cap: `18446744073709552s` is too long to be a duration bosun can count",
        ),
        (
            ["--time-cap", "400d"],
            "--time-cap: a time cap can be a week at most (7d)",
        ),
        (
            ["--stop-grace", "9999999999d"],
            "--stop-grace: a stop grace can be an hour at most",
        ),
    ] {
        let err = b.fails(&[&["run"], &flags[..], &["--", "true"]].concat())?;
        assert!(err.contains(want), "{flags:?}: {err}");
    }
    let err = b.fails(&[
        "agent",
        "add",
        "x",
        "--cli",
        "claude",
        "--time-cap",
        "18446744073709552s",
    ])?;
    assert!(err.contains("too long to be a duration"), "{err}");
    assert!(b.run_ids().is_empty(), "no run was made");
    b.finish()
}

/// Sends one request on a session of its own and gives bosund's answer: its reply or its error.
fn answer(b: &Bosun, body: Request) -> anyhow::Result<Result<Response, WireError>> {
    runtime()?.block_on(async {
        let (_, mut r, mut w) = hello(b, PROTOCOL_VERSION, Role::Ui).await?;
        w.send_now(&ClientFrame::Request { id: 1, body }).await?;
        match r.read::<ServerFrame>().await? {
            Some(ServerFrame::Response { result, .. }) => Ok(match result {
                ResponseResult::Ok(reply) => Ok(reply),
                ResponseResult::Err(e) => Err(e),
            }),
            other => anyhow::bail!("expected an answer, got {other:?}"),
        }
    })
}

/// The answer is a refusal of a bad request, in words that say `want`.
fn refused(answer: Result<Response, WireError>, want: &str) -> anyhow::Result<()> {
    match answer {
        Err(e) => {
            assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
            assert!(e.message.contains(want), "{want}: {}", e.message);
            Ok(())
        }
        Ok(reply) => anyhow::bail!("expected a refusal ({want}), got {reply:?}"),
    }
}

/// Issue 26: an edit of an agent names what it clears. On the wire an empty permission mode or
/// model, or a zero time cap or output cap, takes the field off (as it always has); a time cap
/// no run could have is refused where the request is read, and the agent is left as it was.
#[test]
fn an_agent_edit_on_the_wire_clears_with_an_empty_value_and_refuses_a_cap_over_a_week()
-> anyhow::Result<()> {
    let b = Bosun::new("proto_agent_edit");
    let cwd = b.scratch().display().to_string();
    b.ok(&[
        "agent",
        "add",
        "coder",
        "--cli",
        "claude",
        "--cwd",
        &cwd,
        "--time-cap",
        "1h",
        "--max-output",
        "1M",
        "--permission-mode",
        "plan",
        "--model",
        "sonnet",
    ])?;
    let shown = || -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::from_str(
            &b.ok(&["agent", "show", "coder", "--json"])?,
        )?)
    };
    let before = shown()?;
    assert_eq!(before["time_cap_ms"], 3_600_000, "{before}");
    assert_eq!(before["max_output"], 1 << 20, "{before}");
    let edit = |p: EditAgentParams| {
        Request::from(EditAgentParams {
            agent: "coder".into(),
            ..p
        })
    };
    let over = edit(EditAgentParams {
        time_cap_ms: Some(8 * 24 * 3600 * 1000),
        model: Some(String::new()),
        ..EditAgentParams::default()
    });
    refused(answer(&b, over)?, "a time cap can be a week at most")?;
    assert_eq!(shown()?, before, "a refused edit changes nothing");
    let clear = edit(EditAgentParams {
        time_cap_ms: Some(0),
        max_output: Some(0),
        permission_mode: Some(String::new()),
        model: Some("  ".into()),
        ..EditAgentParams::default()
    });
    let made = answer(&b, clear)?;
    anyhow::ensure!(made.is_ok(), "expected the edit made, got {made:?}");
    let after = shown()?;
    for field in ["time_cap_ms", "max_output", "permission_mode", "model"] {
        assert!(after[field].is_null(), "{field} cleared: {after}");
    }
    b.finish()
}

/// Issue 26: an edit of an MCP server names what it clears. On the wire an empty client id or
/// client metadata address, or a callback port of zero, takes the field off (as it always has);
/// a browser program for a server that is not the built-in browser is refused, even to clear.
#[test]
fn a_server_edit_on_the_wire_clears_with_an_empty_value_or_a_zero_port() -> anyhow::Result<()> {
    let b = Bosun::new("proto_server_edit");
    b.ok(&[
        "mcp",
        "add",
        "svc",
        "--transport",
        "http",
        "--url",
        "https://mcp.example.com/mcp",
        "--client-id",
        "bosun-test",
        "--callback-port",
        "8765",
        "--client-metadata-url",
        "https://example.com/bosun/client.json",
    ])?;
    let shown = || -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::from_str(
            &b.ok(&["mcp", "show", "svc", "--json"])?,
        )?)
    };
    let before = shown()?;
    assert_eq!(before["client_id"], "bosun-test", "{before}");
    assert_eq!(before["callback_port"], 8765, "{before}");
    let edit = |p: EditServerParams| {
        Request::from(EditServerParams {
            server: "svc".into(),
            ..p
        })
    };
    let browser = edit(EditServerParams {
        browser_program: Some(String::new()),
        ..EditServerParams::default()
    });
    refused(answer(&b, browser)?, "is not the built-in browser")?;
    assert_eq!(shown()?, before, "a refused edit changes nothing");
    let clear = edit(EditServerParams {
        client_id: Some(String::new()),
        callback_port: Some(0),
        client_metadata_url: Some(String::new()),
        ..EditServerParams::default()
    });
    let made = answer(&b, clear)?;
    anyhow::ensure!(made.is_ok(), "expected the edit made, got {made:?}");
    let after = shown()?;
    for field in ["client_id", "callback_port", "client_metadata_url"] {
        assert!(after[field].is_null(), "{field} cleared: {after}");
    }
    assert_eq!(after["url"], before["url"], "the rest stays: {after}");
    b.finish()
}

/// Issue 26: a card's edit names what it does to the hold. On the wire a hold and `clear_hold`
/// together are refused where the request is read, and change nothing; each alone puts the card
/// on hold or takes it off.
#[test]
fn a_card_edit_on_the_wire_puts_on_hold_or_takes_off_but_not_both() -> anyhow::Result<()> {
    let b = Bosun::new("proto_card_edit");
    let card: serde_json::Value =
        serde_json::from_str(&b.ok(&["board", "card", "add", "Write the docs", "--json"])?)?;
    let id = card["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("no id: {card}"))?
        .to_string();
    let shown = || -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::from_str(
            &b.ok(&["board", "card", "show", &id, "--json"])?,
        )?)
    };
    let edit = |hold: Option<&str>, clear_hold: bool| {
        Request::from(EditCardParams {
            card: id.clone(),
            hold: hold.map(str::to_string),
            clear_hold,
            ..EditCardParams::default()
        })
    };
    let before = shown()?;
    refused(
        answer(&b, edit(Some("wait"), true))?,
        "put a card on hold or take it off hold, not both at once",
    )?;
    assert_eq!(shown()?, before, "a refused edit changes nothing");
    let held = answer(&b, edit(Some("the person decides"), false))?;
    anyhow::ensure!(held.is_ok(), "expected the card on hold, got {held:?}");
    let on_hold = shown()?;
    assert!(
        on_hold["hold"].to_string().contains("the person decides"),
        "{on_hold}"
    );
    let freed = answer(&b, edit(None, true))?;
    anyhow::ensure!(freed.is_ok(), "expected the card off hold, got {freed:?}");
    let after = shown()?;
    assert!(after["hold"].is_null(), "off hold: {after}");
    b.finish()
}

/// Issue 44: a request whose parameters could not be read was answered with a `bad_frame`
/// error that carried no id, so a client could not tell which of its requests it was for, and
/// the error quoted the input whole (a 3 MB string came back in full). Now the answer goes to
/// the request's id, names its method and says why, quoting a few hundred bytes at most; a
/// frame without an id is answered as before, cut as short; and the session goes on.
#[test]
fn a_request_with_bad_parameters_is_answered_under_its_id_naming_it_and_quoting_little()
-> anyhow::Result<()> {
    let b = Bosun::new("proto_bad_params");
    b.ok(&["ps"])?;
    let big = "a".repeat(3_000_000);
    runtime()?.block_on(async {
        let (reply, mut r, mut w) = hello(&b, PROTOCOL_VERSION, Role::Ui).await?;
        anyhow::ensure!(matches!(reply, HelloReply::Welcome(_)), "{reply:?}");
        let cases = [
            (
                41,
                serde_json::json!({"type": "request", "id": 41,
                    "body": {"method": "list_runs", "params": {"all": big}}}),
                "request `list_runs` could not be read, so it was not done: invalid type: string \"aaaa",
            ),
            (
                42,
                serde_json::json!({"type": "request", "id": 42,
                    "body": {"method": "get_run", "params": {"run": 7}}}),
                "request `get_run` could not be read, so it was not done: invalid type: integer `7`, expected a string",
            ),
            (
                43,
                serde_json::json!({"type": "request", "id": 43, "body": {"method": big}}),
                "could not be read, so it was not done: unknown variant `aaaa",
            ),
        ];
        for (id, frame, want) in cases {
            let body = serde_json::to_vec(&frame)?;
            w.send_encoded(&(body.len() as u32).to_be_bytes()).await?;
            w.send_encoded(&body).await?;
            w.flush().await?;
            match r.read::<ServerFrame>().await? {
                Some(ServerFrame::Response {
                    id: rid,
                    result: ResponseResult::Err(e),
                }) => {
                    assert_eq!(rid, id, "answered under the request's id: {e:?}");
                    assert_eq!(e.code, ErrorCode::BadFrame, "{e:?}");
                    assert!(e.message.contains(want), "{want}: {}", e.message);
                    assert!(e.message.len() < 1_000, "quoted at most a few hundred bytes: {} bytes", e.message.len());
                }
                other => anyhow::bail!("expected an error under id {id}, got {other:?}"),
            }
        }
        // A request that reads well but quotes megabytes (a run's id prefix) is refused in
        // words that do not echo it whole.
        let frame = serde_json::json!({"type": "request", "id": 45,
            "body": {"method": "get_run", "params": {"run": big}}});
        let body = serde_json::to_vec(&frame)?;
        w.send_encoded(&(body.len() as u32).to_be_bytes()).await?;
        w.send_encoded(&body).await?;
        w.flush().await?;
        match r.read::<ServerFrame>().await? {
            Some(ServerFrame::Response {
                id: 45,
                result: ResponseResult::Err(e),
            }) => {
                assert!(e.message.contains("aaaa…aaaa"), "{}", &e.message[..200]);
                assert!(e.message.len() <= 8 * 1024, "{} bytes", e.message.len());
            }
            other => anyhow::bail!("expected an error under id 45, got {other:?}"),
        }
        // Without an id, the error frame as before, as short.
        let body = format!("{{\"type\":\"request\",\"body\":{{\"method\":\"{big}\"}}}}");
        w.send_encoded(&(body.len() as u32).to_be_bytes()).await?;
        w.send_encoded(body.as_bytes()).await?;
        w.flush().await?;
        match r.read::<ServerFrame>().await? {
            Some(ServerFrame::Error(e)) => {
                assert_eq!(e.code, ErrorCode::BadFrame);
                assert!(e.message.starts_with("a frame was not a valid request and was ignored: "), "{}", e.message);
                assert!(e.message.contains('…'), "{}", e.message);
                assert!(e.message.len() < 1_000, "{} bytes", e.message.len());
            }
            other => anyhow::bail!("expected an error frame, got {other:?}"),
        }
        status_works(&mut r, &mut w, 44).await
    })?;
    b.finish()
}
