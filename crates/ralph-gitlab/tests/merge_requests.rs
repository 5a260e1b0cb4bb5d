//! The merge-request calls landing as a merge request makes, against the fake GitLab.

use ralph_test_support::gitlab_server;

use gitlab_server::{GitlabServer, PROJECT, TOKEN};
use ralph_gitlab::{Client, Error, MergeRequestState, NewMergeRequest, Token};

fn client(server: &GitlabServer) -> Client {
    Client::new(server.url(), Token::new(TOKEN), PROJECT.parse().unwrap())
}

fn new<'a>(branch: &'a str, draft: bool) -> NewMergeRequest<'a> {
    NewMergeRequest {
        title: "Add the widget",
        description: "ralph passed task 3 in 2 iterations",
        source_branch: branch,
        target_branch: "main",
        draft,
    }
}

#[test]
fn a_merge_request_is_opened_once_then_found_by_its_branch_and_updated() {
    let server = GitlabServer::start();
    server.add_merge_request("ralph/other", "main", "Someone else's", "opened");
    let mut client = client(&server);

    assert_eq!(client.merge_request_for("ralph/3").unwrap(), None);
    let opened = client.open_merge_request(&new("ralph/3", false)).unwrap();
    let found = client.merge_request_for("ralph/3").unwrap().unwrap();
    let updated = client
        .update_merge_request(found.iid, None, Some("now 3 iterations"))
        .unwrap();
    let again = client
        .open_merge_request(&new("ralph/3", false))
        .unwrap_err();

    assert_eq!(found, opened);
    assert_eq!(opened.state, MergeRequestState::Opened);
    assert_eq!(
        (opened.source_branch.as_str(), opened.target_branch.as_str()),
        ("ralph/3", "main")
    );
    assert_eq!(
        opened.web_url,
        format!(
            "https://gitlab.example/{PROJECT}/-/merge_requests/{}",
            opened.iid
        )
    );
    assert_eq!(updated.description, "now 3 iterations");
    assert_eq!(updated.title, "Add the widget");
    assert!(
        matches!(&again, Error::Status { status: 409, message, .. } if message.contains("already exists")),
        "{again:?}"
    );
    assert_eq!(server.merge_requests().len(), 2);
}

#[test]
fn a_draft_is_titled_so_and_stays_a_draft_when_retitled() {
    let server = GitlabServer::start();
    let mut client = client(&server);

    let draft = client.open_merge_request(&new("ralph/4", true)).unwrap();
    let retitled = client
        .update_merge_request(draft.iid, Some("Add the better widget"), None)
        .unwrap();

    assert!(
        draft.draft && draft.title == "Draft: Add the widget",
        "{draft:?}"
    );
    assert_eq!(retitled.title, "Draft: Add the better widget");
}

#[test]
fn a_closed_merge_request_is_found_for_its_branch_and_an_open_one_comes_first() {
    let server = GitlabServer::start();
    let closed = server.add_merge_request("ralph/5", "main", "Old try", "closed");
    let mut client = client(&server);

    let found = client.merge_request_for("ralph/5").unwrap().unwrap();
    assert_eq!(
        (found.iid, found.state),
        (closed, MergeRequestState::Closed)
    );
    assert_eq!(
        client.merge_request(closed).unwrap().state.as_str(),
        "closed"
    );

    let open = server.add_merge_request("ralph/5", "main", "New try", "opened");
    server.add_merge_request("ralph/5", "main", "Merged try", "merged");
    let found = client.merge_request_for("ralph/5").unwrap().unwrap();
    assert_eq!((found.iid, found.state), (open, MergeRequestState::Opened));
}

#[test]
fn a_rate_limit_or_a_5xx_on_a_merge_request_call_asks_for_a_wait_and_a_refusal_does_not() {
    use gitlab_server::Fault;
    use ralph_rest::{WaitKind, Waitable};

    let server = GitlabServer::start();
    server.fail_next("merge_requests", Fault::RetryAfter(9));
    server.fail_next("merge_requests", Fault::Status(503));
    let mut client = client(&server);
    let mut refused = Client::new(
        server.url(),
        Token::new("glpat-wrong"),
        PROJECT.parse().unwrap(),
    );

    let limited = client.merge_request_for("ralph/6").unwrap_err();
    let down = client
        .open_merge_request(&new("ralph/6", false))
        .unwrap_err();
    let no = refused
        .open_merge_request(&new("ralph/6", false))
        .unwrap_err();

    assert_eq!(
        limited.wait_kind(),
        WaitKind::RateLimited(std::time::Duration::from_secs(9))
    );
    assert_eq!(down.wait_kind(), WaitKind::Unreachable);
    assert_eq!(no.wait_kind(), WaitKind::Never);
    assert!(no.to_string().contains("check GITLAB_TOKEN"), "{no}");
    assert!(server.merge_requests().is_empty(), "nothing opened");
}
