//! What a container's command says about how it ends, so a batch pod applied from an ordinary
//! manifest finishes as it would on a real node.
//!
//! The sim runs no process: it reads the container's `command` and `args` (joined as the
//! runtime joins them; without a `command` the image is taken to have no entrypoint, as
//! busybox, alpine and most shell images have none) and recognizes one shape, a shell script:
//! `sh -c SCRIPT` (also `/bin/sh`, `bash`, `ash`, `dash`, by any absolute path, and the
//! options `-e`, `-u`, `-x`, `-v` beside `-c`, as in `sh -ec`). The script is a list of
//! simple commands joined by `;`, newlines or `&&`, each one of
//!
//! - `sleep S...` (seconds, fractional allowed, suffixes `s`, `m`, `h`, `d` as GNU sleep):
//!   takes that long, status 0;
//! - `exit [N]`: ends the script with status `N` (modulo 256, as a shell does), or with the
//!   last status when `N` is missing;
//! - `true` / `:` (status 0) and `false` (status 1);
//!
//! with words quoted in `'...'` or `"..."` and `#` comments. `&&` runs its right side only
//! after a status 0; `-e` ends the script at the first failing command outside an `&&` list's
//! left side, as a shell does. A script that runs to its end exits with the last status.
//!
//! Anything else — another program, a pipe, a redirection, a variable, `sleep infinity`, a
//! sleep beyond [`LONGEST_SLEEP`], an unbalanced quote — is a command the sim cannot follow:
//! the container keeps running, as every container did before commands were read. Nothing
//! here panics on what a client wrote.

use std::time::Duration;

use serde_json::Value;

/// Sleeps longer than this (a year) are taken as never ending: the container keeps running.
pub(crate) const LONGEST_SLEEP: Duration = Duration::from_secs(365 * 24 * 3600);

/// How a container's command ends: with `code`, `after` it started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Exit {
    /// How long the command runs.
    pub after: Duration,
    /// The exit code, 0 to 255.
    pub code: i32,
}

/// How `container` (an element of a pod spec's `containers`) ends, or None when it keeps
/// running: its command is not a shell script the sim can follow.
pub(crate) fn exit_of(container: &Value) -> Option<Exit> {
    let argv = argv_of(container)?;
    script_exit(shell_script(&argv)?)
}

/// The words the container runs: `command` followed by `args`; None when neither is set or
/// either holds something other than strings.
fn argv_of(container: &Value) -> Option<Vec<&str>> {
    let words = |field: &str| -> Option<Vec<&str>> {
        match container.get(field) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => items.iter().map(Value::as_str).collect(),
            Some(_) => None,
        }
    };
    let mut argv = words("command")?;
    argv.extend(words("args")?);
    (!argv.is_empty()).then_some(argv)
}

/// The shells whose `-c` scripts are read.
const SHELLS: &[&str] = &["sh", "bash", "ash", "dash"];

/// Shell options that change nothing the sim follows, or (`e`) that it follows.
const SHELL_OPTIONS: &str = "cexuv";

/// The script of `sh -c SCRIPT` (with its options), if `argv` is one.
fn shell_script<'a>(argv: &[&'a str]) -> Option<Script<'a>> {
    let [program, options, script, ..] = argv else {
        return None;
    };
    if !SHELLS.contains(&basename(program)?) {
        return None;
    }
    let flags = options.strip_prefix('-')?;
    let valid = !flags.is_empty()
        && flags.chars().all(|c| SHELL_OPTIONS.contains(c))
        && flags.matches('c').count() == 1;
    valid.then_some(Script {
        text: script,
        errexit: flags.contains('e'),
    })
}

/// A program's name: `sh` for `sh`, `/bin/sh` or `/usr/bin/sh`; None for a relative path.
fn basename(program: &str) -> Option<&str> {
    if program.starts_with('/') {
        program.rsplit('/').next().filter(|name| !name.is_empty())
    } else {
        (!program.contains('/')).then_some(program)
    }
}

/// A `-c` script and whether `-e` is set.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Script<'a> {
    text: &'a str,
    errexit: bool,
}

/// How a script given to `sh -c` ends, or None when the sim cannot follow it.
fn script_exit(script: Script) -> Option<Exit> {
    let mut status = 0;
    let mut elapsed = Duration::ZERO;
    let statements = statements(&tokenize(script.text)?)?;
    for (i, statement) in statements.iter().enumerate() {
        if statement.after_and && status != 0 {
            continue;
        }
        match simple_command(&statement.words)? {
            Command::Sleep(d) => {
                elapsed = elapsed.checked_add(d).filter(|t| *t <= LONGEST_SLEEP)?;
                status = 0;
            }
            Command::Status(code) => status = code,
            Command::Exit(code) => {
                return Some(Exit {
                    after: elapsed,
                    code: code.unwrap_or(status),
                });
            }
        }
        let left_of_and = statements.get(i + 1).is_some_and(|next| next.after_and);
        if script.errexit && status != 0 && !left_of_and {
            break;
        }
    }
    Some(Exit {
        after: elapsed,
        code: status,
    })
}

/// A lexical piece of a script.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    /// `;` or a newline.
    Then,
    /// `&&`.
    And,
}

/// Characters that start a construct the sim does not follow (pipes, redirections,
/// subshells, expansions, escapes, a lone `&`).
const UNFOLLOWED: &str = "|<>()$`\\";

/// Splits a script into words and separators; None on an unbalanced quote or a construct the
/// sim does not follow.
fn tokenize(script: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut Option<String>, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => end_word(&mut word, &mut tokens),
            '\n' | ';' => {
                end_word(&mut word, &mut tokens);
                tokens.push(Token::Then);
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                end_word(&mut word, &mut tokens);
                tokens.push(Token::And);
            }
            '#' if word.is_none() => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        tokens.push(Token::Then);
                        break;
                    }
                }
            }
            '\'' | '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    let inner = chars.next()?;
                    if inner == c {
                        break;
                    }
                    if c == '"' && "$`\\".contains(inner) {
                        return None;
                    }
                    current.push(inner);
                }
            }
            '&' => return None,
            c if UNFOLLOWED.contains(c) => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    end_word(&mut word, &mut tokens);
    Some(tokens)
}

/// One simple command of a script and whether it follows `&&`.
#[derive(Debug, Clone, PartialEq)]
struct Statement {
    words: Vec<String>,
    after_and: bool,
}

/// Groups tokens into simple commands; None when `&&` has no command on either side.
fn statements(tokens: &[Token]) -> Option<Vec<Statement>> {
    let mut statements = Vec::new();
    let mut words = Vec::new();
    let mut after_and = false;
    for token in tokens {
        match token {
            Token::Word(w) => words.push(w.clone()),
            Token::Then if words.is_empty() && after_and => return None,
            Token::Then if words.is_empty() => {}
            Token::Then => statements.push(Statement {
                words: std::mem::take(&mut words),
                after_and: std::mem::replace(&mut after_and, false),
            }),
            Token::And if words.is_empty() => return None,
            Token::And => {
                statements.push(Statement {
                    words: std::mem::take(&mut words),
                    after_and,
                });
                after_and = true;
            }
        }
    }
    if words.is_empty() {
        return (!after_and).then_some(statements);
    }
    statements.push(Statement { words, after_and });
    Some(statements)
}

/// What a simple command does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Command {
    /// Takes this long, status 0.
    Sleep(Duration),
    /// Sets the status at once.
    Status(i32),
    /// Ends the script, with this code or the last status.
    Exit(Option<i32>),
}

/// The command `words` run, or None when the sim does not follow it.
fn simple_command(words: &[String]) -> Option<Command> {
    let (program, args) = words.split_first()?;
    match (basename(program)?, args) {
        ("exit", []) => Some(Command::Exit(None)),
        ("exit", [code]) => exit_code(code).map(|c| Command::Exit(Some(c))),
        ("sleep", args) if !args.is_empty() => {
            let mut total = Duration::ZERO;
            for arg in args {
                total = total.checked_add(sleep_duration(arg)?)?;
            }
            Some(Command::Sleep(total))
        }
        ("true" | ":", []) => Some(Command::Status(0)),
        ("false", []) => Some(Command::Status(1)),
        _ => None,
    }
}

/// `exit N`'s code: a decimal number taken modulo 256, as a shell does.
fn exit_code(word: &str) -> Option<i32> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let code = word
        .bytes()
        .fold(0u32, |acc, b| (acc * 10 + u32::from(b - b'0')) % 256);
    i32::try_from(code).ok()
}

/// One `sleep` operand: a non-negative decimal number with an optional `s`, `m`, `h` or `d`
/// suffix; None for anything else (including `infinity`) or a sleep beyond [`LONGEST_SLEEP`].
fn sleep_duration(word: &str) -> Option<Duration> {
    let (number, unit) = match word.char_indices().last()? {
        (i, 's') => (&word[..i], 1.0),
        (i, 'm') => (&word[..i], 60.0),
        (i, 'h') => (&word[..i], 3600.0),
        (i, 'd') => (&word[..i], 86_400.0),
        _ => (word, 1.0),
    };
    let digits = number.bytes().filter(u8::is_ascii_digit).count();
    let dots = number.bytes().filter(|b| *b == b'.').count();
    if digits == 0 || dots > 1 || digits + dots != number.len() {
        return None;
    }
    let seconds = number.parse::<f64>().ok()? * unit;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| *d <= LONGEST_SLEEP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exits(after_ms: u64, code: i32) -> Option<Exit> {
        Some(Exit {
            after: Duration::from_millis(after_ms),
            code,
        })
    }

    #[test]
    fn commands_decide_how_containers_end() {
        let cases: Vec<(Value, Option<Exit>)> = vec![
            // Each recognized form.
            (json!({"command": ["sh", "-c", "exit 0"]}), exits(0, 0)),
            (json!({"command": ["sh", "-c", "exit 3"]}), exits(0, 3)),
            (json!({"command": ["/bin/sh", "-c", "exit 1"]}), exits(0, 1)),
            (json!({"command": ["bash", "-c", "exit 2"]}), exits(0, 2)),
            (
                json!({"command": ["/usr/bin/bash", "-c", "exit 2"]}),
                exits(0, 2),
            ),
            (
                json!({"command": ["sh", "-c"], "args": ["exit 4"]}),
                exits(0, 4),
            ),
            (
                json!({"command": ["sh"], "args": ["-c", "exit 5"]}),
                exits(0, 5),
            ),
            (json!({"args": ["sh", "-c", "exit 6"]}), exits(0, 6)),
            (
                json!({"command": ["sh", "-c", "sleep 2; exit 1"]}),
                exits(2000, 1),
            ),
            (
                json!({"command": ["sh", "-c", "sleep 0.5 && exit 7"]}),
                exits(500, 7),
            ),
            (json!({"command": ["sh", "-c", "sleep 0.3"]}), exits(300, 0)),
            (
                json!({"command": ["sh", "-c", "sleep .25; exit 0"]}),
                exits(250, 0),
            ),
            (
                json!({"command": ["sh", "-c", "sleep 1s; sleep 1m"]}),
                exits(61_000, 0),
            ),
            (
                json!({"command": ["sh", "-c", "sleep 1 2"]}),
                exits(3000, 0),
            ),
            (
                json!({"command": ["sh", "-c", "/bin/sleep 1; exit 9"]}),
                exits(1000, 9),
            ),
            (json!({"command": ["sh", "-c", "true"]}), exits(0, 0)),
            (json!({"command": ["sh", "-c", "false"]}), exits(0, 1)),
            (json!({"command": ["sh", "-c", ":"]}), exits(0, 0)),
            (json!({"command": ["sh", "-c", ""]}), exits(0, 0)),
            (
                json!({"command": ["sh", "-c", "sleep 1; false"]}),
                exits(1000, 1),
            ),
            (json!({"command": ["sh", "-c", "false; exit"]}), exits(0, 1)),
            (json!({"command": ["sh", "-c", "exit 256"]}), exits(0, 0)),
            (json!({"command": ["sh", "-c", "exit 300"]}), exits(0, 44)),
            (
                json!({"command": ["sh", "-c", "exit 99999999999999999999999"]}),
                exits(0, 255),
            ),
            (
                json!({"command": ["sh", "-c", "exit 0; sleep 5"]}),
                exits(0, 0),
            ),
            // && short-circuits; ; does not.
            (
                json!({"command": ["sh", "-c", "false && exit 3"]}),
                exits(0, 1),
            ),
            (
                json!({"command": ["sh", "-c", "false && exit 3; exit 4"]}),
                exits(0, 4),
            ),
            (
                json!({"command": ["sh", "-c", "false && sleep 9 && exit 0"]}),
                exits(0, 1),
            ),
            (
                json!({"command": ["sh", "-c", "true && sleep 1 && exit 2"]}),
                exits(1000, 2),
            ),
            // -e ends at the first failure outside the left side of &&.
            (
                json!({"command": ["sh", "-ec", "false; exit 0"]}),
                exits(0, 1),
            ),
            (
                json!({"command": ["sh", "-ec", "false && true; exit 0"]}),
                exits(0, 0),
            ),
            (
                json!({"command": ["sh", "-ce", "sleep 1; exit 3"]}),
                exits(1000, 3),
            ),
            (
                json!({"command": ["sh", "-xc", "false; exit 0"]}),
                exits(0, 0),
            ),
            // Odd spacing, newlines, comments.
            (
                json!({"command": ["sh", "-c", "  sleep   0.5 ;exit   3  "]}),
                exits(500, 3),
            ),
            (
                json!({"command": ["sh", "-c", "sleep 0.5&&exit 3"]}),
                exits(500, 3),
            ),
            (
                json!({"command": ["sh", "-c", "\tsleep 1\n\nexit 2\n"]}),
                exits(1000, 2),
            ),
            (json!({"command": ["sh", "-c", "exit 0;"]}), exits(0, 0)),
            (
                json!({"command": ["sh", "-c", "# batch\nexit 5 # done"]}),
                exits(0, 5),
            ),
            // Quoted words.
            (json!({"command": ["sh", "-c", "exit '3'"]}), exits(0, 3)),
            (
                json!({"command": ["sh", "-c", "sleep \"0.5\"; exit \"2\""]}),
                exits(500, 2),
            ),
            (
                json!({"command": ["sh", "-c", "'sleep' 1 && 'exit' 1"]}),
                exits(1000, 1),
            ),
            (
                json!({"command": ["sh", "-c", "sleep 0.'5'; exit 0"]}),
                exits(500, 0),
            ),
            // Unknown commands keep running.
            (json!({}), None),
            (json!({"image": "nginx:1.25"}), None),
            (json!({"command": ["nginx", "-g", "daemon off;"]}), None),
            (json!({"command": ["sleep", "5"]}), None),
            (
                json!({"command": ["sh", "-c", "./run-tests; exit 0"]}),
                None,
            ),
            (json!({"command": ["sh", "-c", "echo hi; exit 0"]}), None),
            (json!({"command": ["sh", "-c", "sleep infinity"]}), None),
            (json!({"command": ["sh", "-c", "sleep 100000000000"]}), None),
            (
                json!({"command": ["sh", "-c", "while true; do sleep 1; done"]}),
                None,
            ),
            (json!({"command": ["sh", "script.sh"]}), None),
            (json!({"command": ["sh", "-c"]}), None),
            (json!({"command": ["python", "-c", "exit 0"]}), None),
            (json!({"command": ["./sh", "-c", "exit 0"]}), None),
            (json!({"command": ["sh", "-o", "exit 0"]}), None),
            (json!({"command": ["sh", "-cc", "exit 0"]}), None),
            (json!({"command": ["sh -c 'exit 0'"]}), None),
            // Garbage keeps running, without a panic.
            (json!({"command": "sh -c 'exit 0'"}), None),
            (json!({"command": ["sh", "-c", 7]}), None),
            (
                json!({"command": ["sh", "-c", "exit 1"], "args": [null]}),
                None,
            ),
            (json!({"command": ["sh", "-c", "exit '3"]}), None),
            (json!({"command": ["sh", "-c", "exit \"$CODE\""]}), None),
            (json!({"command": ["sh", "-c", "exit $CODE"]}), None),
            (json!({"command": ["sh", "-c", "exit -1"]}), None),
            (json!({"command": ["sh", "-c", "exit 1 2"]}), None),
            (json!({"command": ["sh", "-c", "exit three"]}), None),
            (json!({"command": ["sh", "-c", "sleep"]}), None),
            (json!({"command": ["sh", "-c", "sleep -1"]}), None),
            (json!({"command": ["sh", "-c", "sleep 1.2.3"]}), None),
            (json!({"command": ["sh", "-c", "sleep nan"]}), None),
            (json!({"command": ["sh", "-c", "sleep 1e3"]}), None),
            (json!({"command": ["sh", "-c", "sleep ."]}), None),
            (json!({"command": ["sh", "-c", "sleep s"]}), None),
            (json!({"command": ["sh", "-c", "sleep 1 | exit 0"]}), None),
            (json!({"command": ["sh", "-c", "sleep 1 & exit 0"]}), None),
            (json!({"command": ["sh", "-c", "sleep 1 || exit 0"]}), None),
            (json!({"command": ["sh", "-c", "exit 0 > /dev/null"]}), None),
            (json!({"command": ["sh", "-c", "(exit 0)"]}), None),
            (json!({"command": ["sh", "-c", "exit \\0"]}), None),
            (json!({"command": ["sh", "-c", "exit 0 &&"]}), None),
            (json!({"command": ["sh", "-c", "&& exit 0"]}), None),
            (
                json!({"command": ["sh", "-c", "sleep 1 && ; exit 0"]}),
                None,
            ),
            (json!({"command": ["sh", "-c", "exit ١"]}), None),
            (json!({"command": ["sh", "-c", "sleep ١"]}), None),
            (json!({"command": ["", "-c", "exit 0"]}), None),
            (json!({"command": ["/", "-c", "exit 0"]}), None),
            (json!({"command": ["sh", "-", "exit 0"]}), None),
        ];
        for (container, expected) in cases {
            assert_eq!(exit_of(&container), expected, "{container}");
        }
    }
}
