//! Plain-text tables for a terminal or a log: each column padded to its widest cell, two spaces
//! apart, no trailing blanks (`moot-render --list`, moot-report).

use std::io::{self, Write};

/// Writes `rows` (the header first, if any) as aligned columns.
pub fn write_columns<R: AsRef<[String]>>(rows: &[R], out: &mut impl Write) -> io::Result<()> {
    let columns = rows.iter().map(|row| row.as_ref().len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.as_ref().get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .as_ref()
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_their_widest_cell_in_characters() {
        let rows = [
            ["name", "n"].map(String::from),
            ["é-long", "12"].map(String::from),
        ];
        let mut out = Vec::new();
        write_columns(&rows, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "name    n\né-long  12\n");
    }
}
