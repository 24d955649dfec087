//! Parquet tables: a column list ([`Table`]), rows buffered by column ([`Columns`]),
//! and one file written in row groups of bounded size under a temporary name, renamed
//! when complete ([`TableFile`]).
//!
//! This writes through the `parquet` crate's own column writers
//! (`SerializedFileWriter`), not through Arrow record batches: kwire's rows are flat
//! (two list columns), so Arrow's arrays would only be an extra copy, and leaving the
//! crate's `arrow` feature out keeps a dozen `arrow-*` crates out of the build.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::TypePtr;

/// The version of the export's layout (tables, columns, their types and meaning), stored
/// in every file's key-value metadata as `kwire.format_version`. Raised when a column
/// changes meaning or type or goes away; adding a column does not raise it.
pub const FORMAT_VERSION: &str = "1";

/// A column's type, as Parquet stores it (`docs/parquet-format.md` gives the engines'
/// names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// BOOLEAN.
    Bool,
    /// INT32 annotated INTEGER(16, signed).
    I16,
    /// INT32.
    I32,
    /// INT64.
    I64,
    /// DOUBLE.
    F64,
    /// BYTE_ARRAY annotated STRING (UTF-8).
    Str,
    /// BYTE_ARRAY, no annotation.
    Bytes,
    /// INT64 annotated TIMESTAMP(MICROS, UTC).
    TimestampMicros,
    /// A LIST of INT32 annotated INTEGER(16, signed); the list itself is never null.
    ListI16,
    /// A LIST of STRING; the list itself is never null.
    ListStr,
}

impl Ty {
    /// The type's Parquet spelling, in `docs/parquet-format.md`'s `parquet type` column.
    pub fn parquet_name(&self) -> &'static str {
        match self {
            Ty::Bool => "BOOLEAN",
            Ty::I16 => "INT32 (INTEGER(16,true))",
            Ty::I32 => "INT32",
            Ty::I64 => "INT64",
            Ty::F64 => "DOUBLE",
            Ty::Str => "BYTE_ARRAY (STRING)",
            Ty::Bytes => "BYTE_ARRAY",
            Ty::TimestampMicros => "INT64 (TIMESTAMP(MICROS,true))",
            Ty::ListI16 => "LIST<INT32 (INTEGER(16,true))>",
            Ty::ListStr => "LIST<BYTE_ARRAY (STRING)>",
        }
    }
}

/// One column of a table.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Whether it may be null.
    pub nullable: bool,
}

/// A table: its name (the folder under `--out`) and its columns in order.
#[derive(Clone, Debug)]
pub struct Table {
    /// `messages`, `partitions` or `records`.
    pub name: &'static str,
    /// The columns, in file order.
    pub cols: Vec<Col>,
}

impl Table {
    /// The Parquet schema in the text form `parquet::schema::parser` reads.
    pub fn schema_text(&self) -> String {
        let mut s = format!("message {} {{\n", self.name);
        for c in &self.cols {
            let rep = if c.nullable { "OPTIONAL" } else { "REQUIRED" };
            let leaf = match c.ty {
                Ty::Bool => "BOOLEAN",
                Ty::I16 => "INT32 {} (INTEGER(16,true))",
                Ty::I32 => "INT32",
                Ty::I64 => "INT64",
                Ty::F64 => "DOUBLE",
                Ty::Str => "BYTE_ARRAY {} (STRING)",
                Ty::Bytes => "BYTE_ARRAY",
                Ty::TimestampMicros => "INT64 {} (TIMESTAMP(MICROS,true))",
                Ty::ListI16 | Ty::ListStr => "",
            };
            match c.ty {
                Ty::ListI16 | Ty::ListStr => {
                    let el = if c.ty == Ty::ListI16 {
                        "INT32 element (INTEGER(16,true))"
                    } else {
                        "BYTE_ARRAY element (STRING)"
                    };
                    s.push_str(&format!(
                        "  REQUIRED group {} (LIST) {{ REPEATED group list {{ REQUIRED {el}; }} }}\n",
                        c.name
                    ));
                }
                _ if leaf.contains("{}") => {
                    s.push_str(&format!("  {rep} {};\n", leaf.replace("{}", c.name)));
                }
                _ => s.push_str(&format!("  {rep} {leaf} {};\n", c.name)),
            }
        }
        s.push('}');
        s
    }

    /// The parsed Parquet schema.
    ///
    /// # Errors
    /// Only if [`Table::schema_text`] were malformed (a bug; the unit tests parse every table).
    pub fn schema(&self) -> Result<TypePtr, String> {
        parse_message_type(&self.schema_text())
            .map(Arc::new)
            .map_err(|e| format!("{} schema: {e}", self.name))
    }
}

/// One value of a row, in its column's order. The row builder in `rows.rs` gives these.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'x> {
    /// Null (only in a nullable column).
    Null,
    /// A boolean.
    Bool(bool),
    /// Any integer column (I16, I32, I64, TimestampMicros); range-checked when written.
    Int(i64),
    /// A double.
    F64(f64),
    /// A string.
    Str(&'x str),
    /// Bytes.
    Bytes(&'x [u8]),
    /// A list of 16-bit integers.
    IntList(&'x [i64]),
    /// A list of strings.
    StrList(&'x [&'x str]),
}

/// One column's buffered values and levels.
#[derive(Debug)]
enum Values {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bytes(ByteValues),
}

/// A string or bytes column's buffered values: their bytes one after the other and where
/// each ends. 8 bytes a value besides its bytes, where a `ByteArray` a value was 32 and
/// an allocation of its own (a row group of the records table held 12 MiB of
/// `ByteArray`s for its "about 4 MiB" of values). The `ByteArray`s the Parquet writer
/// takes are made when the row group is written, [`WRITE_CHUNK`] values at a time.
#[derive(Debug, Default)]
struct ByteValues {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl ByteValues {
    fn push(&mut self, b: &[u8]) {
        self.data.extend_from_slice(b);
        self.ends.push(self.data.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Values `r` as the writer takes them (each its own copy, as a value the writer
    /// keeps for the column's statistics must not hold the whole buffer); a range past
    /// the values gives those there are, and the writer then says the levels and values
    /// disagree.
    fn arrays(&self, r: std::ops::Range<usize>) -> Vec<ByteArray> {
        (r.start.min(self.len())..r.end.min(self.len()))
            .map(|i| {
                let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
                ByteArray::from(self.data[start..self.ends[i]].to_vec())
            })
            .collect()
    }

    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
    }
}

/// Levels of a column without repetition handed to the Parquet writer in one call: a
/// multiple of its mini-batch (`write_batch_size`, 1024 by default), so the writer cuts
/// the same mini-batches, pages and statistics as from one call of the whole row group,
/// and the file's bytes are the same.
const WRITE_CHUNK: usize = 8 * 1024;

#[derive(Debug)]
struct ColBuf {
    values: Values,
    def: Vec<i16>,
    rep: Vec<i16>,
}

/// Rows buffered by column, up to one row group.
#[derive(Debug)]
pub struct Columns {
    table: Table,
    cols: Vec<ColBuf>,
    rows: usize,
    bytes: usize,
}

impl Columns {
    /// Empty buffers for `table`.
    pub fn new(table: &Table) -> Columns {
        let cols = table
            .cols
            .iter()
            .map(|c| ColBuf {
                values: match c.ty {
                    Ty::Bool => Values::Bool(Vec::new()),
                    Ty::I16 | Ty::I32 | Ty::ListI16 => Values::I32(Vec::new()),
                    Ty::I64 | Ty::TimestampMicros => Values::I64(Vec::new()),
                    Ty::F64 => Values::F64(Vec::new()),
                    Ty::Str | Ty::Bytes | Ty::ListStr => Values::Bytes(ByteValues::default()),
                },
                def: Vec::new(),
                rep: Vec::new(),
            })
            .collect();
        Columns {
            table: table.clone(),
            cols,
            rows: 0,
            bytes: 0,
        }
    }

    /// Rows buffered.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// About how many bytes the buffered values take (8 a number, the length of a
    /// string or bytes).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Appends one row: one cell per column, in order.
    ///
    /// # Errors
    /// A row of the wrong width, a cell of the wrong type, a null in a required column
    /// or an integer out of its column's range (bugs in the row builder, reported
    /// instead of writing a wrong file). The buffers are unchanged then.
    pub fn push(&mut self, row: &[Cell<'_>]) -> Result<(), String> {
        if row.len() != self.table.cols.len() {
            return Err(format!(
                "{}: a row of {} cells for {} columns",
                self.table.name,
                row.len(),
                self.table.cols.len()
            ));
        }
        for (c, cell) in self.table.cols.iter().zip(row) {
            check(c, cell).map_err(|e| format!("{}.{}: {e}", self.table.name, c.name))?;
        }
        for ((c, cell), b) in self.table.cols.iter().zip(row).zip(&mut self.cols) {
            self.bytes += put(c, cell, b);
        }
        self.rows += 1;
        Ok(())
    }

    /// Writes the buffered rows as one row group of `w` and empties the buffers.
    ///
    /// # Errors
    /// The Parquet writer's errors.
    pub fn write_row_group(
        &mut self,
        w: &mut SerializedFileWriter<File>,
    ) -> Result<(), parquet::errors::ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = w.next_row_group()?;
        for (c, b) in self.table.cols.iter().zip(&mut self.cols) {
            let Some(mut cw) = rg.next_column()? else {
                break;
            };
            let list = matches!(c.ty, Ty::ListI16 | Ty::ListStr);
            let def = (c.nullable || list).then_some(b.def.as_slice());
            let rep = list.then_some(b.rep.as_slice());
            match &b.values {
                Values::Bool(v) => {
                    cw.typed::<BoolType>().write_batch(v, def, rep)?;
                }
                Values::I32(v) => {
                    cw.typed::<Int32Type>().write_batch(v, def, rep)?;
                }
                Values::I64(v) => {
                    cw.typed::<Int64Type>().write_batch(v, def, rep)?;
                }
                Values::F64(v) => {
                    cw.typed::<DoubleType>().write_batch(v, def, rep)?;
                }
                Values::Bytes(v) => {
                    let t = cw.typed::<ByteArrayType>();
                    if rep.is_some() {
                        // A list column: the writer cuts its mini-batches at rows.
                        t.write_batch(&v.arrays(0..v.len()), def, rep)?;
                    } else {
                        let levels = def.map_or(v.len(), <[i16]>::len);
                        let mut at = 0;
                        for start in (0..levels).step_by(WRITE_CHUNK) {
                            let end = (start + WRITE_CHUNK).min(levels);
                            let d = def.map(|d| &d[start..end]);
                            let n = d.map_or(end - start, |d| d.iter().filter(|&&l| l > 0).count());
                            t.write_batch(&v.arrays(at..at + n), d, None)?;
                            at += n;
                        }
                    }
                }
            }
            cw.close()?;
            b.def.clear();
            b.rep.clear();
            match &mut b.values {
                Values::Bool(v) => v.clear(),
                Values::I32(v) => v.clear(),
                Values::I64(v) => v.clear(),
                Values::F64(v) => v.clear(),
                Values::Bytes(v) => v.clear(),
            }
        }
        rg.close()?;
        self.rows = 0;
        self.bytes = 0;
        // A row group's values are many small allocations, freed together here.
        crate::memory::give_back_free_memory();
        Ok(())
    }
}

/// Whether `cell` fits column `c`.
fn check(c: &Col, cell: &Cell<'_>) -> Result<(), String> {
    let ok = match (c.ty, cell) {
        (_, Cell::Null) => c.nullable && !matches!(c.ty, Ty::ListI16 | Ty::ListStr),
        (Ty::Bool, Cell::Bool(_)) => true,
        (Ty::I16, Cell::Int(v)) => i16::try_from(*v).is_ok(),
        (Ty::I32, Cell::Int(v)) => i32::try_from(*v).is_ok(),
        (Ty::I64 | Ty::TimestampMicros, Cell::Int(_)) => true,
        (Ty::F64, Cell::F64(_)) => true,
        (Ty::Str, Cell::Str(_)) | (Ty::Bytes, Cell::Bytes(_)) => true,
        (Ty::ListI16, Cell::IntList(l)) => l.iter().all(|v| i16::try_from(*v).is_ok()),
        (Ty::ListStr, Cell::StrList(_)) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{cell:?} does not fit {:?}", c.ty))
    }
}

/// Appends a checked cell; returns about how many bytes it takes.
fn put(c: &Col, cell: &Cell<'_>, b: &mut ColBuf) -> usize {
    let list = matches!(c.ty, Ty::ListI16 | Ty::ListStr);
    match cell {
        Cell::Null => {
            b.def.push(0);
            return 1;
        }
        _ if c.nullable && !list => b.def.push(1),
        _ => {}
    }
    match (cell, &mut b.values) {
        (Cell::Bool(v), Values::Bool(x)) => x.push(*v),
        (Cell::Int(v), Values::I32(x)) => x.push(*v as i32),
        (Cell::Int(v), Values::I64(x)) => x.push(*v),
        (Cell::F64(v), Values::F64(x)) => x.push(*v),
        (Cell::Str(s), Values::Bytes(x)) => {
            x.push(s.as_bytes());
            return 8 + s.len();
        }
        (Cell::Bytes(s), Values::Bytes(x)) => {
            x.push(s);
            return 8 + s.len();
        }
        (Cell::IntList(l), Values::I32(x)) => {
            levels((&mut b.def, &mut b.rep), l.len());
            x.extend(l.iter().map(|v| *v as i32));
            return 8 + 4 * l.len();
        }
        (Cell::StrList(l), Values::Bytes(x)) => {
            levels((&mut b.def, &mut b.rep), l.len());
            let mut n = 8;
            for s in l.iter() {
                n += 8 + s.len();
                x.push(s.as_bytes());
            }
            return n;
        }
        _ => {}
    }
    8
}

/// The levels of one required list of `n` elements: an empty list is one entry at
/// definition level 0; elements are at level 1, the first starting a row (repetition 0).
fn levels((def, rep): (&mut Vec<i16>, &mut Vec<i16>), n: usize) {
    if n == 0 {
        def.push(0);
        rep.push(0);
        return;
    }
    for i in 0..n {
        def.push(1);
        rep.push(i16::from(i > 0));
    }
}

/// How files are written.
#[derive(Clone, Debug)]
pub struct FileOptions {
    /// Page compression: `zstd` (level 3) or `snappy`.
    pub compression: Compression,
    /// A row group is written when this many rows are buffered...
    pub row_group_rows: usize,
    /// ...or when the buffered values take about this many bytes.
    pub row_group_bytes: usize,
    /// A file is finished after this many row groups and the next rows go to a new
    /// one: a writer keeps every row group's metadata until its footer, so this keeps
    /// memory flat however large the capture.
    pub file_row_groups: usize,
}

impl FileOptions {
    /// zstd level 3, at most 65,536 rows or about 4 MiB a row group, 32 row groups a file.
    pub fn new(zstd: bool) -> FileOptions {
        FileOptions {
            compression: if zstd {
                Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default())
            } else {
                Compression::SNAPPY
            },
            row_group_rows: 65_536,
            row_group_bytes: 4 << 20,
            file_row_groups: 32,
        }
    }

    fn properties(&self, meta: Vec<KeyValue>) -> WriterPropertiesPtr {
        Arc::new(
            WriterProperties::builder()
                .set_compression(self.compression)
                .set_created_by(format!("kwire {}", env!("CARGO_PKG_VERSION")))
                .set_key_value_metadata(Some(meta))
                .build(),
        )
    }
}

/// One Parquet file being written: under a temporary name beside its final one (a dot
/// file, which Spark, Hive and Trino leave out of a folder's listing, and which has no
/// footer until it is complete), renamed to the final name by [`TableFile::finish`].
pub struct TableFile {
    tmp: PathBuf,
    path: PathBuf,
    writer: Option<SerializedFileWriter<File>>,
    buf: Columns,
    opts: FileOptions,
    row_groups: usize,
}

impl TableFile {
    /// Creates `path`'s temporary file (and its folder) for `table`, with `meta` (beside
    /// `kwire.format_version` and `kwire.table`) in its key-value metadata.
    ///
    /// # Errors
    /// The folder or file cannot be made.
    pub fn create(
        table: &Table,
        path: &Path,
        opts: &FileOptions,
        meta: &[(&str, String)],
    ) -> Result<TableFile, String> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp"));
        let file = File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut kv = vec![
            KeyValue::new("kwire.format_version".into(), FORMAT_VERSION.to_string()),
            KeyValue::new("kwire.table".into(), table.name.to_string()),
        ];
        kv.extend(
            meta.iter()
                .map(|(k, v)| KeyValue::new(k.to_string(), v.clone())),
        );
        let writer = SerializedFileWriter::new(file, table.schema()?, opts.properties(kv))
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        Ok(TableFile {
            tmp,
            path: path.to_path_buf(),
            writer: Some(writer),
            buf: Columns::new(table),
            opts: opts.clone(),
            row_groups: 0,
        })
    }

    /// Appends a row, writing a row group when the buffer is full.
    ///
    /// # Errors
    /// A row that does not fit the table; write errors.
    pub fn push(&mut self, row: &[Cell<'_>]) -> Result<(), String> {
        self.buf.push(row)?;
        if self.buf.rows() >= self.opts.row_group_rows
            || self.buf.bytes() >= self.opts.row_group_bytes
        {
            self.flush()?;
        }
        Ok(())
    }

    /// Whether the file holds [`FileOptions::file_row_groups`] row groups, and should be
    /// finished.
    pub fn full(&self) -> bool {
        self.row_groups >= self.opts.file_row_groups
    }

    fn flush(&mut self) -> Result<(), String> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        self.row_groups += usize::from(self.buf.rows() > 0);
        self.buf
            .write_row_group(w)
            .map_err(|e| format!("{}: {e}", self.tmp.display()))
    }

    /// Writes the last row group and the footer, then renames the file to its final
    /// name. Returns the final path.
    ///
    /// # Errors
    /// Write or rename errors (the temporary file is removed then).
    pub fn finish(mut self) -> Result<PathBuf, String> {
        let res = self.flush().and_then(|()| match self.writer.take() {
            Some(w) => w
                .close()
                .map(|_| ())
                .map_err(|e| format!("{}: {e}", self.tmp.display())),
            None => Ok(()),
        });
        let res = res.and_then(|()| {
            std::fs::rename(&self.tmp, &self.path)
                .map_err(|e| format!("{}: {e}", self.path.display()))
        });
        if res.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        res.map(|()| self.path.clone())
    }
}

impl Drop for TableFile {
    /// A file dropped before [`TableFile::finish`] (an error elsewhere) leaves nothing:
    /// its temporary file, which has no footer, is removed.
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.writer = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Table {
        Table {
            name: "t",
            cols: vec![
                Col {
                    name: "a",
                    ty: Ty::I16,
                    nullable: false,
                },
                Col {
                    name: "b",
                    ty: Ty::Str,
                    nullable: true,
                },
                Col {
                    name: "c",
                    ty: Ty::ListStr,
                    nullable: false,
                },
                Col {
                    name: "d",
                    ty: Ty::TimestampMicros,
                    nullable: false,
                },
            ],
        }
    }

    #[test]
    fn schema_parses() {
        let s = t().schema().unwrap();
        assert_eq!(s.get_fields().len(), 4);
    }

    #[test]
    fn bad_cells_are_refused() {
        let mut c = Columns::new(&t());
        let list: [&str; 0] = [];
        assert!(c
            .push(&[
                Cell::Int(1 << 20),
                Cell::Null,
                Cell::StrList(&list),
                Cell::Int(0)
            ])
            .is_err());
        assert!(c
            .push(&[Cell::Null, Cell::Null, Cell::StrList(&list), Cell::Int(0)])
            .is_err());
        assert!(c.push(&[Cell::Int(1)]).is_err());
        assert_eq!(c.rows(), 0);
        c.push(&[
            Cell::Int(1),
            Cell::Str("x"),
            Cell::StrList(&["p", "q"]),
            Cell::Int(5),
        ])
        .unwrap();
        assert_eq!(c.rows(), 1);
    }

    #[test]
    fn file_is_renamed_when_complete_and_removed_when_dropped() {
        let dir = std::env::temp_dir().join(format!("kwire-table-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let p = dir.join("x/part.parquet");
        let mut f = TableFile::create(&t(), &p, &FileOptions::new(true), &[]).unwrap();
        f.push(&[Cell::Int(1), Cell::Null, Cell::StrList(&[]), Cell::Int(5)])
            .unwrap();
        assert!(dir.join("x/.part.parquet.tmp").exists() && !p.exists());
        let got = f.finish().unwrap();
        assert_eq!(got, p);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
        assert!(!dir.join("x/.part.parquet.tmp").exists());
        let p2 = dir.join("x/part2.parquet");
        let f = TableFile::create(&t(), &p2, &FileOptions::new(false), &[]).unwrap();
        drop(f);
        assert!(!dir.join("x/.part2.parquet.tmp").exists() && !p2.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
