//! `system` (plugin name `sys`): the desktop and the command line, through the host's `process` import. The plugin
//! runs nothing by itself: every program is one the operator granted (`[plugin.system] exec`),
//! run with argv only, an empty environment plus the granted variables, and killed at the
//! call's deadline.
//!
//! A WebAssembly guest cannot see the host's operating system, so the desktop tools try the
//! Linux program first and the macOS one next, moving on only when the host refuses (not
//! granted, cannot start): the operator's grants choose the platform at run time.

use toolhost_sdk::process::{self, Output};

/// Run the first of `candidates` the host agrees to run. `Err` lists every refusal, so the
/// operator sees each grant that would have allowed the call.
pub fn first_granted(candidates: &[(&str, Vec<String>)]) -> Result<(String, Output), String> {
    let mut refusals = Vec::new();
    for (program, args) in candidates {
        match process::run(program, args) {
            Ok(out) => return Ok((program.to_string(), out)),
            Err(e) => refusals.push(format!("{program}: {e}")),
        }
    }
    Err(refusals.join("\n"))
}

/// `Ok(stdout)` for exit code 0, else an error with the program's stderr.
pub fn expect_success(program: &str, out: Output) -> Result<String, String> {
    let mut text = out.stdout_text();
    if out.truncated {
        text.push_str("\n[output cut at the host's limit]");
    }
    if out.success() {
        return Ok(text);
    }
    let why = match out.code {
        Some(c) => format!("exited with code {c}"),
        None => "was stopped by a signal".to_string(),
    };
    let stderr = out.stderr_text();
    Err(format!("{program} {why}: {}", if stderr.trim().is_empty() { text.trim() } else { stderr.trim() }))
}

/// Split a command line into arguments: words separated by whitespace, `'…'` and `"…"` keep
/// spaces, `\` escapes the next character outside single quotes. Nothing is expanded: `$HOME`,
/// `*`, `;` and `|` are ordinary characters, because no shell ever sees them. A JSON array of
/// strings (`["a b", "c"]`) is taken as the exact argument list.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let trimmed = line.trim();
    if trimmed.starts_with('[')
        && let Ok(list) = serde_json::from_str::<Vec<String>>(trimmed)
    {
        return Ok(list);
    }
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated ' quote in the arguments".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch) => cur.push(ch),
                            None => return Err("the arguments end with a lone \\".into()),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated \" quote in the arguments".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(ch) => cur.push(ch),
                    None => return Err("the arguments end with a lone \\".into()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    args.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        args.push(cur);
    }
    Ok(args)
}

/// An application name as the desktop tools accept it: letters, digits, spaces and `._-+`,
/// never starting with `-` (it would be read as an option by the launcher).
pub fn check_app_name(name: &str) -> Result<&str, String> {
    let name = name.trim();
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_alphanumeric() || " ._-+".contains(c));
    if ok { Ok(name) } else { Err(format!("{name:?} is not an application name")) }
}

// Named `sys` for the operator (`[plugin.sys]`, `--allow-run sys=git`). It requests any
// program (`*`): what it can run is exactly the operator's `exec` grant — the desktop tools use
// `wmctrl` and `gtk-launch` on Linux, `osascript` and `open` on macOS.
#[toolhost_sdk::plugin(name = "sys", exec = "*")]
mod tools {
    use super::{check_app_name, expect_success, first_granted, split_args, without_final_newline};

    /// List the open desktop applications. On Linux runs `wmctrl -l -x` (X11 or XWayland
    /// windows: one line per window with its class and title); on macOS asks System Events
    /// through `osascript` for the names of the visible applications. Needs one of those
    /// programs granted by the operator.
    #[tool(read_only, category = "system")]
    pub fn list_apps() -> Result<String, String> {
        let (program, out) = first_granted(&[
            ("wmctrl", vec!["-l".into(), "-x".into()]),
            (
                "osascript",
                vec![
                    "-e".into(),
                    "tell application \"System Events\" to get name of every process whose background only is false"
                        .into(),
                ],
            ),
        ])?;
        let text = expect_success(&program, out)?;
        Ok(if text.trim().is_empty() { "no open applications".into() } else { text })
    }

    /// Start a desktop application by name. On Linux runs `gtk-launch NAME`, where NAME is the
    /// application's desktop file id (`firefox`, `org.gnome.Calculator`); on macOS
    /// `open -a NAME` (`Safari`, `Calculator`). The application keeps running after the call
    /// only if the operator granted the launcher with `detach = true`.
    /// - `name`: the application's desktop id (Linux) or name (macOS)
    #[tool(category = "system")]
    pub fn open_app(name: String) -> Result<String, String> {
        let name = check_app_name(&name)?;
        let (program, out) =
            first_granted(&[("gtk-launch", vec![name.into()]), ("open", vec!["-a".into(), name.into()])])?;
        expect_success(&program, out)?;
        Ok(format!("started {name} (with {program})"))
    }

    /// Close a desktop application gracefully, as its window's close button would (unsaved
    /// work may prompt). On Linux runs `wmctrl -c NAME`, which closes the first window whose
    /// title contains NAME; on macOS tells the application to quit through `osascript` (the
    /// name is passed as an argument, never spliced into the script).
    /// - `name`: part of the window title (Linux) or the application name (macOS)
    #[tool(category = "system")]
    pub fn close_app(name: String) -> Result<String, String> {
        let name = check_app_name(&name)?;
        let (program, out) = first_granted(&[
            ("wmctrl", vec!["-c".into(), name.into()]),
            (
                "osascript",
                vec![
                    "-e".into(),
                    "on run argv".into(),
                    "-e".into(),
                    "tell application (item 1 of argv) to quit".into(),
                    "-e".into(),
                    "end run".into(),
                    name.into(),
                ],
            ),
        ])?;
        expect_success(&program, out)?;
        Ok(format!("asked {name} to close (with {program})"))
    }

    /// Run a command-line program the operator allows and return its output (stdout, then
    /// stderr) as it printed it, except that one trailing newline is removed. The host runs the
    /// granted executable directly, never through a shell: `;`, `|`, `$VAR` and `*` are plain
    /// characters. Programs, arguments and environment are limited by the operator's grant.
    /// - `program`: a granted program's name, e.g. `git`
    /// - `args`: the arguments, separated by spaces; quote with '…' or "…" to keep spaces, or
    ///   give a JSON array of strings for the exact list
    #[tool(rest, output_limit = 20000, category = "system")]
    pub fn run(program: String, args: String) -> Result<String, String> {
        let argv = split_args(&args)?;
        let out = toolhost_sdk::process::run(&program, &argv)?;
        let code = out.code;
        let mut text = out.stdout_text();
        let stderr = out.stderr_text();
        if !stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&stderr);
        }
        if out.truncated {
            // First, so the tool's own output limit cannot cut the notice off. Cut mid-output:
            // no newline is the last one, so nothing is removed.
            return Ok(format!("[output cut at the host's limit; {program} was stopped there]\n{text}"));
        }
        without_final_newline(&mut text);
        match code {
            Some(0) => Ok(text),
            Some(c) => Err(format!("{program} exited with code {c}\n{text}")),
            None => Err(format!("{program} was stopped by a signal\n{text}")),
        }
    }
}

/// The one change `run` makes to a program's output: its last line ending (`\n` or `\r\n`)
/// goes, as every program ends its output with one (`echo hi` gives `hi`). Only one: blank
/// lines the program printed at the end stay, as do leading and inner whitespace.
fn without_final_newline(text: &mut String) {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_final_newline_goes() {
        for (out, want) in [("hi\n", "hi"), ("hi", "hi"), ("a\n\n", "a\n"), ("a\r\n", "a"), ("\n", ""), ("  x \n", "  x ")] {
            let mut text = out.to_string();
            without_final_newline(&mut text);
            assert_eq!(text, want, "{out:?}");
        }
    }

    #[test]
    fn arguments_split_like_a_command_line_without_expansion() {
        assert_eq!(split_args("a; rm -rf /").unwrap(), ["a;", "rm", "-rf", "/"]);
        assert_eq!(split_args("log --format='%H %s' -5").unwrap(), ["log", "--format=%H %s", "-5"]);
        assert_eq!(split_args(r#""a b" c\ d $HOME"#).unwrap(), ["a b", "c d", "$HOME"]);
        assert_eq!(split_args(r#"["a; rm -rf /", "b"]"#).unwrap(), ["a; rm -rf /", "b"]);
        assert_eq!(split_args("").unwrap(), Vec::<String>::new());
        assert_eq!(split_args("''").unwrap(), [""]);
        assert!(split_args("'open").is_err());
    }

    #[test]
    fn app_names_cannot_be_options() {
        assert!(check_app_name("-a Terminal").is_err());
        assert!(check_app_name("Calculator").is_ok());
        assert!(check_app_name("x\"; do shell script \"rm").is_err());
    }
}
