//! A table of text cells, drawn as a terminal table, markdown or csv.

/// A header and rows of cells, one per column.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { header: header.into_iter().map(Into::into).collect(), rows: vec![] }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// For a terminal (comfy-table, condensed UTF-8 borders).
    pub fn text(&self) -> String {
        let mut table = comfy_table::Table::new();
        table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
        table.set_header(self.header.clone());
        for row in &self.rows {
            table.add_row(row.clone());
        }
        table.to_string()
    }

    /// A GitHub markdown table, ending with a newline.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n|{}\n", self.header.join(" | "), "---|".repeat(self.header.len()));
        for row in &self.rows {
            out += &format!("| {} |\n", row.join(" | "));
        }
        out
    }

    /// RFC 4180 csv with a header line.
    pub fn csv(&self) -> String {
        let mut writer = csv::Writer::from_writer(vec![]);
        writer.write_record(&self.header).expect("in memory");
        for row in &self.rows {
            writer.write_record(row).expect("in memory");
        }
        String::from_utf8(writer.into_inner().expect("in memory")).expect("utf-8")
    }
}
