//! Ctrl+C and SIGTERM: skip a wait, stop after the iteration, stop now; no process left behind.

use crate::common;

use std::time::{Duration, Instant};

use common::{Project, fake_agent, send_signal};

fn wait_exit(child: &mut std::process::Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("ralph exits with a code");
        }
        assert!(Instant::now() < deadline, "ralph did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ctrl_c_during_a_wait_skips_it() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle'\nidle: {{delay: 30s}}",
            fake_agent()
        ),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "2"]);
    p.wait_for("WAIT_STARTED", 1);
    let asked = Instant::now();
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 0);
    assert!(asked.elapsed() < Duration::from_secs(10));
    assert_eq!(p.events_of("WAIT_SKIPPED").len(), 1);
    assert_eq!(p.run_ended()["reason"], "max_iterations");
    assert_eq!(p.events_of("ITERATION_ENDED").len(), 2);
}

#[test]
fn two_ctrl_c_within_a_second_during_a_wait_stop_the_loop() {
    let p = Project::new(
        &format!(
            "agent: '{} --marker idle --sleep 2'\nidle: {{delay: 30s}}",
            fake_agent()
        ),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("WAIT_STARTED", 1);
    send_signal(child.id(), libc::SIGINT);
    p.wait_for("WAIT_SKIPPED", 1);
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 130);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "interrupted");
    assert_eq!(ended["exit_code"], 130);
}

#[test]
fn ctrl_c_while_the_agent_runs_stops_after_the_iteration() {
    let p = Project::new(
        &format!("agent: '{} --sleep 0.5 --out finished'", fake_agent()),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 130);
    assert_eq!(p.events_of("STOP_REQUESTED").len(), 1);
    let ended = p.events_of("ITERATION_ENDED");
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["termination"], "natural");
    assert_eq!(ended[0]["exit_code"], 0);
    assert_eq!(p.run_ended()["reason"], "interrupted");
}

#[test]
fn second_ctrl_c_stops_the_agent_now() {
    let marker = "31.4159";
    let p = Project::new(
        &format!("agent: '{} --grandchild {marker} --sleep 30'", fake_agent()),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(200));
    send_signal(child.id(), libc::SIGINT);
    p.wait_for("STOP_REQUESTED", 1);
    let asked = Instant::now();
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 130);
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["termination"],
        "interrupted"
    );
    assert!(
        !common::process_running(&format!("sleep {marker}")),
        "grandchild left behind"
    );
}

#[test]
fn sigterm_stops_now_with_exit_143() {
    let p = Project::new(&format!("agent: '{} --sleep 30'", fake_agent()), "x\n");
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut child), 143);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "interrupted");
    assert_eq!(ended["exit_code"], 143);
}

#[test]
fn sighup_stops_now_with_exit_129_and_the_agent_goes_too() {
    // A closed terminal window or a dropped SSH session: ralph alone gets SIGHUP (the agent
    // runs in a process group of its own), so ralph must stop the agent before it goes.
    let marker = "41.3097";
    let p = Project::new(
        &format!("agent: '{} --sleep {marker}'", fake_agent()),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(200));
    send_signal(child.id(), libc::SIGHUP);
    assert_eq!(wait_exit(&mut child), 129);
    let ended = p.run_ended();
    assert_eq!(ended["reason"], "interrupted");
    assert_eq!(ended["exit_code"], 129);
    assert_eq!(
        p.events_of("ITERATION_ENDED")[0]["termination"],
        "interrupted"
    );
    assert!(
        !common::process_running(&format!("sleep {marker}")),
        "the agent outlived ralph"
    );
}

#[test]
fn a_signal_just_after_the_agent_ended_stops_before_another_iteration() {
    // The first agent ends soon, leaving behind a process outside its group that holds its
    // output open, so ralph goes on reading for a moment after the agent ended: a window in
    // which no process runs and no wait is under way. That process signals ralph within it.
    for (signal, exit) in [("INT", 130), ("TERM", 143)] {
        let p = Project::new("agent: sh agent.sh", "x\n");
        std::fs::write(
            p.path().join("agent.sh"),
            format!(
                "cat >/dev/null\nralph=$PPID\n[ \"$RALPH_ITERATION\" = 1 ] && \
                 setsid sh -c \"sleep 0.2; kill -{signal} $ralph; sleep 1\" &\nsleep 0.1\n"
            ),
        )
        .unwrap();
        let mut child = p.spawn(&["run", "-n", "3"]);
        assert_eq!(wait_exit(&mut child), exit, "SIG{signal}");
        let ended = p.run_ended();
        assert_eq!(ended["reason"], "interrupted");
        assert_eq!(ended["iterations"], 1, "SIG{signal}: {:#?}", p.events());
        assert_eq!(p.events_of("ITERATION_STARTED").len(), 1);
    }
}

#[test]
fn an_agent_ignoring_sigterm_is_killed_after_the_grace_period() {
    let p = Project::new(
        &format!("agent: '{} --ignore-term --sleep 30'", fake_agent()),
        "x\n",
    );
    let mut child = p.spawn(&["run", "-n", "5"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    send_signal(child.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut child), 143);
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "{took:?}"
    );
}

#[test]
fn ctrl_c_during_the_checks_lets_them_finish_and_records_the_attempt() {
    let p = Project::new(
        &format!(
            "agent: '{} --out work'\ndone_when:\n  - 'sleep 0.5; echo still failing; exit 1'\nconvergence: {{backoff: 10ms}}",
            fake_agent()
        ),
        "x\n",
    );
    let mut child = p.spawn(&["run"]);
    p.wait_for("ITERATION_ENDED", 1);
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 130);
    assert_eq!(p.events_of("STOP_REQUESTED").len(), 1);
    let attempts = p.events_of("ATTEMPT_ENDED");
    assert_eq!(attempts.len(), 1, "the attempt is recorded");
    assert_eq!(attempts[0]["results"][0]["tail"], "still failing\n");
    assert_eq!(p.run_ended()["reason"], "interrupted");
    assert_eq!(p.events_of("ITERATION_STARTED").len(), 1);
}

#[test]
fn ctrl_c_in_an_iteration_that_converges_still_reports_convergence() {
    let p = Project::new(
        &format!("agent: '{} --sleep 0.5'\ndone_when: ['true']", fake_agent()),
        "x\n",
    );
    let mut child = p.spawn(&["run"]);
    p.wait_for("ITERATION_STARTED", 1);
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut child), 0);
    assert_eq!(p.run_ended()["reason"], "converged");
}
