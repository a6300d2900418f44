//! The "before" column of BENCHMARKS.md: each table of a new report gets the figure of the same
//! row in the committed report beside its own, so a regression shows in one table (issue #33).
//!
//! A row is the same row when its table starts with the same header cell, has a column of the
//! same name, and the row's first cell is the same. The figure shown is the table's main figure
//! (its second column) and, when the table has one, its first ratio column (a header with `÷`,
//! `×`, `ratio` or ` vs `) — ratios are what compare across runs on a noisy machine. Tables
//! with no row in the committed report are left as they are.

/// A Markdown table: its header cells and its rows' cells.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// The tables of a report, each with the index of its header line.
fn tables(text: &str) -> Vec<(usize, Table)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        if lines[i].trim_start().starts_with('|') && is_separator(lines[i + 1]) {
            let start = i;
            let header = cells(lines[i]);
            i += 2;
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                rows.push(cells(lines[i]));
                i += 1;
            }
            out.push((start, Table { header, rows }));
        } else {
            i += 1;
        }
    }
    out
}

fn is_ratio(name: &str) -> bool {
    name.contains('÷') || name.contains('×') || name.contains("ratio") || name.contains(" vs ")
}

/// The date of the committed run (the first `YYYY-MM-DD` after `; run` on the `Machine:` line),
/// for the header.
fn run_date(text: &str) -> Option<&str> {
    let from = text.find("Machine:")?;
    let rest = &text[from..];
    let rest = &rest[rest.find("; run")?..];
    let bytes = rest.as_bytes();
    (0..bytes.len().saturating_sub(10)).find_map(|i| {
        let d = &bytes[i..i + 10];
        let digits = |r: std::ops::Range<usize>| d[r].iter().all(u8::is_ascii_digit);
        (digits(0..4) && d[4] == b'-' && digits(5..7) && d[7] == b'-' && digits(8..10))
            .then(|| &rest[i..i + 10])
    })
}

/// How many leading cells name a row: the first, or the first two where the first repeats
/// (the throughput table's callers, with and without a second worker).
fn key_len(table: &Table) -> usize {
    let mut seen = std::collections::HashSet::new();
    if table.rows.iter().all(|r| seen.insert(r.first().cloned().unwrap_or_default())) { 1 } else { 2 }
}

/// Rows renamed since an earlier report, as (the name now, the name then): issue #57 made
/// `[audit] fsync` a choice, so the rows of its settings say which.
const RENAMED: &[(&str, &str)] = &[
    // Issue #57's bounds are checked with an independent client too: the bench's client says so.
    (
        "MCP stdio `echo` p50 ≤ 2× the do-nothing server — the bench's Rust client",
        "MCP stdio `echo` p50 ≤ 2× the do-nothing server",
    ),
    ("MCP stdio `echo` p99 ≤ 2× its p50 — the bench's Rust client", "MCP stdio `echo` p99 ≤ 2× its p50"),
    (
        "MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server — the bench's Rust client (2025-06-18 session)",
        "MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server (2025-06-18 session)",
    ),
    ("stdio, `[audit] fsync = \"interval\"`", "stdio"),
    ("stdio, `[audit] fsync = \"always\"` (each line synced before its answer)", "stdio"),
    (
        "stdio, `[audit] fsync = \"never\"` (lines written before each answer, never synced by toolhost)",
        "stdio, `[audit] fsync = false` (lines written, not synced, before each answer)",
    ),
    (
        "streamable HTTP, 2025-06-18 session, `[audit] fsync = \"interval\"`",
        "streamable HTTP (2025-06-18 session)",
    ),
    ("streamable HTTP, `[audit] fsync = \"always\"`", "streamable HTTP (2025-06-18 session)"),
    ("streamable HTTP, `[audit] fsync = \"never\"`", "streamable HTTP, `[audit] fsync = false`"),
    (
        "1. MCP stdio `echo` p50 ≤ executor `echo` + MCP `ping` + 5 µs (`[audit] fsync = \"never\"`)",
        "1. MCP stdio `echo` p50 ≤ executor `echo` + MCP `ping` + 5 µs (`[audit] fsync = false`)",
    ),
    (
        "1. MCP stdio `echo` p99 ≤ 2× p50 (`[audit] fsync = \"never\"`)",
        "1. MCP stdio `echo` p99 ≤ 2× p50 (`[audit] fsync = false`)",
    ),
    (
        "1. the same with each audit line synced before its answer (`[audit] fsync = \"always\"`)",
        "1. the same with the durable audit line (the default)",
    ),
    (
        "2. MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server (2025-06-18 session, `[audit] fsync = \"never\"`)",
        "2. MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server (2025-06-18 session, `[audit] fsync = false`)",
    ),
];

/// A new row's name as an earlier report wrote it.
fn old_name(name: &str) -> &str {
    RENAMED.iter().find(|(now, _)| *now == name).map_or(name, |(_, then)| then)
}

/// The committed value of `column` in the row named `key` of a table that starts like `header0`.
fn find<'a>(old: &'a [(usize, Table)], header0: &str, column: &str, key: &[String]) -> Option<&'a str> {
    // The committed row has the new row's name, or the name it had before a rename.
    let same = |then: &[String], now: &[String]| {
        then.len() == now.len()
            && then.iter().zip(now).all(|(o, n)| {
                let (o, n) = (row_name(o), row_name(n));
                o == n || o == old_name(n)
            })
    };
    old.iter().filter(|(_, t)| t.header.first().map(String::as_str) == Some(header0)).find_map(|(_, t)| {
        let col = t.header.iter().position(|h| h == column)?;
        let row = t.rows.iter().find(|r| r.len() >= key.len() && same(&r[..key.len()], key))?;
        row.get(col).map(String::as_str)
    })
}

/// A row's name without the role a run gave it (`… (**tuned floor**)`: the fastest of the
/// candidates is the floor, and which one that is can change between runs).
fn row_name(cell: &str) -> &str {
    match cell.rfind(" (**") {
        Some(i) if cell.ends_with("**)") => &cell[..i],
        _ => cell,
    }
}

/// The columns whose committed values are shown: the main figure (the first column headed like
/// a measurement) and the first ratio column (one on the tuned floor first); the second
/// column when there is neither.
fn shown(header: &[String]) -> Vec<usize> {
    const FIGURES: [&str; 8] = ["p50", "median", "time", "calls/s", "measured", "rss", "value", "size"];
    let figure = (1..header.len()).find(|&i| {
        let h = header[i].to_lowercase();
        let mut words = h.split(|c: char| !(c.is_alphanumeric() || c == '/'));
        !is_ratio(&h) && words.any(|w| FIGURES.contains(&w))
    });
    let ratios: Vec<usize> =
        (1..header.len()).filter(|&i| is_ratio(&header[i]) && Some(i) != figure).collect();
    let ratio = ratios.iter().find(|&&i| header[i].contains("tuned")).or(ratios.first()).copied();
    match (figure, ratio) {
        (None, None) => vec![1],
        (f, r) => f.into_iter().chain(r).collect(),
    }
}

/// `new` with a "before" column in every table that has rows in `old`.
pub fn add_column(new: &str, old: &str) -> String {
    let old_tables = tables(old);
    let label = match run_date(old) {
        Some(date) => format!("before ({date}, committed)"),
        None => "before (committed)".to_string(),
    };
    let mut lines: Vec<String> = new.lines().map(str::to_string).collect();
    for (start, table) in tables(new) {
        if table.header.len() < 2 {
            continue;
        }
        let header0 = table.header[0].as_str();
        let columns = shown(&table.header);
        let keys = key_len(&table);
        let befores: Vec<Option<String>> = table
            .rows
            .iter()
            .map(|row| {
                let key = row.get(..keys)?;
                let values: Vec<&str> = columns
                    .iter()
                    .map(|&c| find(&old_tables, header0, &table.header[c], key))
                    .collect::<Option<_>>()?;
                Some(values.join(" · "))
            })
            .collect();
        if befores.iter().all(Option::is_none) {
            continue;
        }
        let names: Vec<&str> = columns.iter().map(|&c| table.header[c].as_str()).collect();
        let what = format!("{label}: {}", names.join(" · "));
        lines[start] = format!("{} {} |", lines[start].trim_end(), what.replace('|', "/"));
        lines[start + 1] = format!("{}---|", lines[start + 1].trim_end());
        for (k, before) in befores.into_iter().enumerate() {
            let at = start + 2 + k;
            let cell = before.unwrap_or_else(|| "— (new row)".to_string());
            lines[at] = format!("{} {cell} |", lines[at].trim_end());
        }
    }
    let mut out = lines.join("\n");
    if new.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "Machine: x; rustc 1.95.0 (2026-04-14); runs of 2026-12-01 23:14 UTC.\n\n\
        | what | p50 | ÷ floor |\n|---|---|---|\n| echo | 13.6 µs | 1.28× |\n| read | 33.0 µs | 3.10× |\n\n\
        | language | dev median |\n|---|---|\n| Rust | 702 ms |\n";

    #[test]
    fn each_row_gets_the_committed_figure_and_ratio_of_the_same_row() {
        let new =
            "| what | p50 | ÷ floor |\n|---|---|---|\n| echo | 12.0 µs | 1.10× |\n| split | 17 µs | 1.6× |\n";
        let out = add_column(new, OLD);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "| what | p50 | ÷ floor | before (2026-12-01, committed): p50 · ÷ floor |");
        assert_eq!(lines[1], "|---|---|---|---|");
        assert_eq!(lines[2], "| echo | 12.0 µs | 1.10× | 13.6 µs · 1.28× |");
        assert_eq!(lines[3], "| split | 17 µs | 1.6× | — (new row) |");
    }

    #[test]
    fn a_table_is_matched_by_its_first_header_and_column_names_not_its_row_alone() {
        // "Rust" is a row of the old `dev median` table; the new table has a different main
        // column, so nothing of the old one is shown and the table is left as it is.
        let new = "| language | per-call p50 |\n|---|---|\n| Rust | 23 µs |\n";
        assert_eq!(add_column(new, OLD), new);
        // A table with a column added keeps its before figures.
        let new = "| language | dev median | samples |\n|---|---|---|\n| Rust | 690 ms | 7 |\n";
        assert!(add_column(new, OLD).contains("| Rust | 690 ms | 7 | 702 ms |"));
    }

    #[test]
    fn a_row_is_found_whichever_row_the_run_made_the_floor() {
        let old = "| what | p50 |\n|---|---|\n| keep 1 MiB (**tuned floor**) | 14.3 µs |\n| keep 4 MiB | 14.4 µs |\n";
        let new = "| what | p50 |\n|---|---|\n| keep 1 MiB | 10.7 µs |\n| keep 4 MiB (**tuned floor**) | 10.6 µs |\n";
        let out = add_column(new, old);
        assert!(out.contains("| keep 1 MiB | 10.7 µs | 14.3 µs |"), "{out}");
        assert!(out.contains("| keep 4 MiB (**tuned floor**) | 10.6 µs | 14.4 µs |"), "{out}");
    }

    #[test]
    fn rows_whose_first_cell_repeats_are_named_by_their_first_two() {
        let old =
            "| callers | runtime workers | calls/s |\n|---|---|---|\n| 8 | 1 | 58000 |\n| 8 | 2 | 102000 |\n";
        let new =
            "| callers | runtime workers | calls/s |\n|---|---|---|\n| 8 | 1 | 60000 |\n| 8 | 2 | 101000 |\n";
        let out = add_column(new, old);
        assert!(out.contains("| 8 | 1 | 60000 | 58000 |"), "{out}");
        assert!(out.contains("| 8 | 2 | 101000 | 102000 |"), "{out}");
    }

    #[test]
    fn a_renamed_row_gets_the_figure_of_its_old_name() {
        let old = "| transport | toolhost | ÷ do-nothing |\n|---|---|---|\n| stdio | 343.9 µs | 102.99× |\n\
                   | stdio, `[audit] fsync = false` (lines written, not synced, before each answer) | 21.6 µs | 6.48× |\n";
        let new = "| transport | toolhost | ÷ do-nothing |\n|---|---|---|\n\
                   | stdio, `[audit] fsync = \"interval\"` (**default configuration**) | 22.0 µs | 6.60× |\n\
                   | stdio, `[audit] fsync = \"never\"` (lines written before each answer, never synced by toolhost) | 21.0 µs | 6.40× |\n\
                   | stdio, `[audit] fsync = \"always\"` (each line synced before its answer) | 340.0 µs | 101.00× |\n\
                   | stdio, `ping` | 7.0 µs | 2.1× |\n";
        let out = add_column(new, old);
        let rows: Vec<&str> = out.lines().skip(2).collect();
        assert!(rows[0].ends_with("| 102.99× |"), "{out}");
        assert!(rows[1].ends_with("| 6.48× |"), "{out}");
        assert!(rows[2].ends_with("| 102.99× |"), "{out}");
        assert!(rows[3].ends_with("| — (new row) |"), "{out}");
    }
}
