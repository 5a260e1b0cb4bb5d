use super::*;

fn placements(command: &str) -> Vec<Placement> {
    analyze(command).args.into_iter().map(|(_, p)| p).collect()
}

fn refused(reason: Unquotable) -> Vec<Placement> {
    vec![Placement::Refused(reason)]
}

fn args(value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("x".to_owned(), value.to_owned())])
}

#[test]
fn plain_words_quotes_and_globs_are_not_shell_syntax() {
    for command in [
        "find tasks -maxdepth 1 -type f -name *.md",
        "ls -la src/[a-c]?.rs",
        "git log --oneline -10",
        "grep -rn 'a | b; $HOME' \"x y\" {{ args.x }}",
        "echo \\$HOME \\| \\;",
        "printf '%s\\n' a=b",
        "cargo test\n",
        "echo {{ ralph.iteration }}",
    ] {
        assert!(!has_shell_syntax(command), "{command:?}");
    }
}

#[test]
fn operators_expansions_and_shell_words_are_shell_syntax() {
    for command in [
        "cargo test 2>&1 | tail -50",
        "a && b",
        "a; b",
        "a > out",
        "cat < in",
        "echo $HOME",
        "echo \"$HOME\"",
        "echo `date`",
        "echo $(date)",
        "(cd x)",
        "echo a # comment",
        "ls ~/notes",
        "cd sub",
        "export X=1",
        "X=1 make",
        "if true",
        "echo a\necho b",
        "echo 'unclosed",
        "cat <<EOF\nx\nEOF",
        "a & b",
    ] {
        assert!(has_shell_syntax(command), "{command:?}");
    }
}

#[test]
fn a_hash_inside_a_word_is_not_a_comment() {
    assert!(!has_shell_syntax("echo a#b"));
}

#[test]
fn placements_follow_quotes_and_substitutions() {
    use Placement::*;
    assert_eq!(placements("echo {{ args.x }} |"), [Bare]);
    assert_eq!(placements("echo '{{ args.x }}' |"), [SingleQuoted]);
    assert_eq!(placements("echo \"{{ args.x }}\" |"), [DoubleQuoted]);
    assert_eq!(placements("echo \"$(echo {{ args.x }})\""), [Bare]);
    assert_eq!(
        placements("echo \"$(echo '{{ args.x }}')\""),
        [SingleQuoted]
    );
    assert_eq!(
        placements("echo \"$(echo \"{{ args.x }}\")\""),
        [DoubleQuoted]
    );
    assert_eq!(placements("echo $(echo (a) {{ args.x }})"), [Bare]);
    assert_eq!(placements("(( 1 )) && echo {{ args.x }}"), [Bare]);
    assert_eq!(
        placements("cat <<< {{ args.x }}\necho {{ args.x }}"),
        [Bare, Bare]
    );
    assert_eq!(placements("(cd a && (ls {{ args.x }}))"), [Bare]);
    assert_eq!(placements("echo $(echo a) {{ args.x }}"), [Bare]);
    assert_eq!(placements("echo \"$(a)\" '{{ args.x }}'"), [SingleQuoted]);
    assert_eq!(placements("echo \\\" {{ args.x }} |"), [Bare]);
    assert_eq!(placements("echo \"\\\"{{ args.x }}\" |"), [DoubleQuoted]);
}

#[test]
fn placements_that_cannot_be_quoted_are_refused() {
    use Unquotable::*;
    let cases = [
        ("cat <<EOF\n{{ args.x }}\nEOF", HereDocument),
        ("cat <<-'EOF'\n\t{{ args.x }}\n\tEOF", HereDocument),
        ("cat <<{{ args.x }}\nx\n", HereDocumentDelimiter),
        ("echo `echo {{ args.x }}`", Backticks),
        ("echo \"`{{ args.x }}`\"", Backticks),
        ("echo a # {{ args.x }}", Comment),
        ("echo \\{{ args.x }} |", AfterBackslash),
        ("echo \"\\{{ args.x }}\"", AfterBackslash),
        ("echo ${{ args.x }}", AfterDollar),
        ("echo \"${{ args.x }}\"", AfterDollar),
        ("echo ${v:-{{ args.x }}}", ParameterExpansion),
        ("echo \"${v:-'{{ args.x }}'}\"", ParameterExpansion),
        ("echo $(( 1 + {{ args.x }} ))", Arithmetic),
        ("(( n = {{ args.x }} )); echo", Arithmetic),
        ("for (( i = {{ args.x }}; ; )); do break; done", Arithmetic),
        ("echo $[ {{ args.x }} ]", Unfollowed),
        ("echo `echo \"a\"` {{ args.x }}", Unfollowed),
        ("echo $'a' {{ args.x }}", Unfollowed),
        ("diff <(ls) {{ args.x }}", Unfollowed),
        // bash runs the line after `x=((` as a command: a quoted value's newline with it.
        ("x=(({{ args.x }}", Unfollowed),
        ("x=(a {{ args.x }})", Unfollowed),
        ("echo $(case a in a) echo;; esac) {{ args.x }}", Unfollowed),
    ];
    for (command, reason) in cases {
        assert_eq!(placements(command), refused(reason), "{command:?}");
        assert_eq!(unquotable_args(command).len(), 1, "{command:?}");
    }
}

#[test]
fn text_after_a_here_document_is_command_text_again() {
    use Placement::*;
    assert_eq!(
        placements("cat <<EOF; echo {{ args.x }}\nbody\nEOF\necho '{{ args.x }}'"),
        [Bare, SingleQuoted]
    );
    assert_eq!(
        placements("cat <<A <<B\nA\n{{ args.x }}\nB\necho {{ args.x }}"),
        [Refused(Unquotable::HereDocument), Bare]
    );
}

#[test]
fn a_comment_ends_at_the_newline() {
    assert_eq!(
        placements("echo a # note\necho {{ args.x }}"),
        [Placement::Bare]
    );
}

#[test]
fn words_are_split_like_shlex_without_placeholders() {
    for command in [
        "find tasks -maxdepth 1 -type f -name *.md",
        "printf '%s|%s' \"a b\" c\\ d",
        "echo \"a\\\"b\\\\c\\d\" ''",
        "echo  a\tb\n",
        "echo é'ü'",
    ] {
        assert_eq!(
            words(command, &|_: &str, _: &str| None),
            shlex::split(command).unwrap(),
            "{command:?}"
        );
    }
}

#[test]
fn a_value_is_one_word_or_part_of_one_verbatim() {
    let value = "a b'c\"d $(x) `y` \\ *.md\nz";
    assert_eq!(
        command_line("printf %s {{ args.x }} --dir={{ args.x }}", &args(value)).unwrap(),
        CommandLine::Words(vec![
            "printf".into(),
            "%s".into(),
            value.into(),
            format!("--dir={value}")
        ])
    );
}

#[test]
fn a_value_not_given_is_no_word_unless_quoted() {
    assert_eq!(
        command_line("ls {{ args.x }} \"{{ args.x }}\"", &BTreeMap::new()).unwrap(),
        CommandLine::Words(vec!["ls".into(), String::new()])
    );
    assert_eq!(
        command_line("ls {{ args.x }}", &args("")).unwrap(),
        CommandLine::Words(vec!["ls".into(), String::new()])
    );
}

#[test]
fn shell_scripts_get_values_quoted_for_where_they_stand() {
    let value = "it's \"$x\"";
    assert_eq!(
        command_line(
            "a {{ args.x }} '{{ args.x }}' \"{{ args.x }}\" | b",
            &args(value)
        )
        .unwrap(),
        CommandLine::Shell(
            "a 'it'\\''s \"$x\"' 'it'\\''s \"$x\"' \"it's \\\"\\$x\\\"\" | b".to_owned()
        )
    );
}

#[test]
fn rendering_a_refused_placement_fails() {
    let err = command_line("echo `{{ args.x }}`", &args("v")).unwrap_err();
    assert_eq!(err, (6..18, Unquotable::Backticks));
}

#[test]
fn other_placeholders_stay_as_written() {
    assert_eq!(
        command_line("echo {{ ralph.iteration }} | cat", &BTreeMap::new()).unwrap(),
        CommandLine::Shell("echo {{ ralph.iteration }} | cat".to_owned())
    );
}

proptest::proptest! {
    /// The lexer never panics and never loses a placeholder, whatever the command.
    #[test]
    fn every_args_placeholder_gets_a_placement(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                " ", "'", "\"", "\\", "$", "$(", "(", ")", "`", "${", "}", "$((", "))", "#",
                "\n", "<<", "<<-", "EOF", "case ", "é", "{{ args.x }}", "{{ ralph.name }}", "|",
            ]),
            0..24,
        )
    ) {
        let command: String = parts.concat();
        let expected = template::scan(&command)
            .iter()
            .filter(|f| f.placeholder.namespace == "args")
            .count();
        proptest::prop_assert_eq!(analyze(&command).args.len(), expected);
        let _ = command_line(&command, &args("v"));
        let _ = has_shell_syntax(&command);
    }
}
