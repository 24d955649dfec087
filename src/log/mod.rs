//! Kafka log directories and their files, read like `kafka-dump-log.sh` but into
//! kwire's trees, with byte offsets relative to each file.
//!
//! | file | reader | items |
//! |---|---|---|
//! | `NNN.log`, `*.checkpoint` (KRaft snapshots, `bootstrap.checkpoint`) | [`segment`] | one `batch` item per RecordBatch (or legacy message), streamed with a bounded buffer |
//! | `NNN.index` (int32 relative offset, int32 position), `NNN.timeindex` (int64 timestamp, int32 relative offset), `NNN.txnindex` (int16 version, int64 producerId, int64 firstOffset, int64 lastOffset, int64 lastStableOffset) | [`files`] | one `entry` item per entry, checked against the segment's batches |
//! | `NNN.snapshot` (producer state: int16 version, uint32 CRC-32C, int32 count, 46-byte entries) | [`files`] | one `entry` item per producer |
//! | `quorum-state` (JSON), `leader-epoch-checkpoint`, `*-offset-checkpoint`, `partition.metadata`, `meta.properties` (text) | [`files`] | one `entry` item per line or field |
//!
//! A folder is walked in offset order (segments by base offset, each segment's files
//! after its `.log`); a log directory's partition folders in name order. The topic of a
//! partition folder comes from its name (`__consumer_offsets-31`) or `--topic`, so
//! internal topics' records decode (see [`crate::decode::internal_topics`]).
//!
//! Problems (a cut segment, a bad CRC, an index past the end...) are [`Finding`]s at
//! their file and byte offset; the rest of the file is still read.

pub mod census;
pub mod files;
pub mod segment;

use crate::decode::internal_topics::InternalTopic;
use crate::decode::Detail;
use crate::schema::Schema;
use crate::tree::Node;
use std::io;
use std::path::{Path, PathBuf};

/// What a file in a log directory is, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `NNN.log`: a segment (RecordBatches back to back).
    Segment,
    /// `NNN.index`: the offset index.
    OffsetIndex,
    /// `NNN.timeindex`: the time index.
    TimeIndex,
    /// `NNN.txnindex`: the aborted-transaction index.
    TxnIndex,
    /// `NNN.snapshot`: a producer-state snapshot.
    ProducerSnapshot,
    /// `NNN-EEE.checkpoint` or `bootstrap.checkpoint`: a KRaft snapshot.
    KraftSnapshot,
    /// `quorum-state`: the KRaft election state (JSON).
    QuorumState,
    /// `leader-epoch-checkpoint`.
    LeaderEpochCheckpoint,
    /// `partition.metadata`: the partition's topic id.
    PartitionMetadata,
    /// `meta.properties`: the node's identity.
    MetaProperties,
    /// `recovery-point-offset-checkpoint`, `replication-offset-checkpoint`,
    /// `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`.
    OffsetCheckpoint,
}

impl FileKind {
    /// The kind of a file from its name; `None` for files kwire does not read
    /// (`.kafka_cleanshutdown`, `.deleted` files...).
    pub fn of(path: &Path) -> Option<FileKind> {
        let name = path.file_name()?.to_str()?;
        Some(match name {
            "quorum-state" => FileKind::QuorumState,
            "leader-epoch-checkpoint" => FileKind::LeaderEpochCheckpoint,
            "partition.metadata" => FileKind::PartitionMetadata,
            "meta.properties" => FileKind::MetaProperties,
            n if n.ends_with("-offset-checkpoint") => FileKind::OffsetCheckpoint,
            n if n.ends_with(".checkpoint") => FileKind::KraftSnapshot,
            n if n.ends_with(".log") => FileKind::Segment,
            n if n.ends_with(".index") => FileKind::OffsetIndex,
            n if n.ends_with(".timeindex") => FileKind::TimeIndex,
            n if n.ends_with(".txnindex") => FileKind::TxnIndex,
            n if n.ends_with(".snapshot") => FileKind::ProducerSnapshot,
            _ => return None,
        })
    }

    /// The JSON name of the kind (`segment`, `offset_index`...).
    pub fn as_str(&self) -> &'static str {
        match self {
            FileKind::Segment => "segment",
            FileKind::OffsetIndex => "offset_index",
            FileKind::TimeIndex => "time_index",
            FileKind::TxnIndex => "txn_index",
            FileKind::ProducerSnapshot => "producer_snapshot",
            FileKind::KraftSnapshot => "kraft_snapshot",
            FileKind::QuorumState => "quorum_state",
            FileKind::LeaderEpochCheckpoint => "leader_epoch_checkpoint",
            FileKind::PartitionMetadata => "partition_metadata",
            FileKind::MetaProperties => "meta_properties",
            FileKind::OffsetCheckpoint => "offset_checkpoint",
        }
    }
}

/// How serious a [`Finding`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Normal but worth saying (an offset gap after compaction).
    Info,
    /// Legal but odd.
    Warning,
    /// Broken bytes.
    Error,
}

impl Level {
    /// `info`, `warning`, `error`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// A problem (or a fact `--verify` reports) at a file and byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The file.
    pub file: PathBuf,
    /// Byte offset in the file.
    pub offset: u64,
    /// How serious it is.
    pub level: Level,
    /// What it is.
    pub message: String,
    /// The file could not be read or followed past here: it cannot be opened, listed or
    /// read, it ends inside an entry (a cut file), or an entry's length or magic cannot
    /// be (bytes that are not a log). `kwire log` exits 2 on such a finding, as `kwire
    /// read` does on a capture that is cut or not a capture.
    pub unreadable: bool,
}

impl Finding {
    /// The finding as one line: `FILE@OFFSET: level: message`.
    pub fn line(&self) -> String {
        format!(
            "{}@{}: {}: {}",
            self.file.display(),
            self.offset,
            self.level.as_str(),
            self.message
        )
    }
}

/// What one item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// A RecordBatch or legacy message of a segment or KRaft snapshot.
    Batch,
    /// An entry of any other file (an index entry, a producer, a line).
    Entry,
}

/// A RecordBatch's header facts, read straight from its bytes (no tree needed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchInfo {
    /// The magic byte (0, 1: legacy messages; 2: RecordBatch).
    pub magic: i8,
    /// `baseOffset` (legacy: the message's offset).
    pub base_offset: i64,
    /// `baseOffset + lastOffsetDelta` (legacy: the message's offset).
    pub last_offset: i64,
    /// Bytes of the entry, offset and length fields included.
    pub size: u64,
    /// `recordsCount` (legacy: 1).
    pub count: i32,
    /// The stored CRC and whether it matches the bytes.
    pub crc: u32,
    /// Whether the CRC matches (CRC-32C for v2, CRC-32 for legacy).
    pub crc_ok: bool,
    /// `attributes`.
    pub attributes: i16,
    /// `partitionLeaderEpoch` (-1 for legacy).
    pub leader_epoch: i32,
    /// `baseTimestamp` (legacy v1: the timestamp; v0: -1).
    pub base_timestamp: i64,
    /// `maxTimestamp`.
    pub max_timestamp: i64,
    /// `producerId`, `producerEpoch`, `baseSequence`.
    pub producer: (i64, i16, i32),
}

impl BatchInfo {
    /// A control batch (attributes bit 5).
    pub fn is_control(&self) -> bool {
        self.magic == 2 && self.attributes & 0x20 != 0
    }
    /// A transactional batch (attributes bit 4).
    pub fn is_transactional(&self) -> bool {
        self.magic == 2 && self.attributes & 0x10 != 0
    }
    /// The compression codec's name.
    pub fn compression(&self) -> String {
        crate::decode::compress::Codec::from_attributes(self.attributes.into()).name()
    }
}

/// One item of a file: a batch or an entry, its tree with file-relative offsets.
#[derive(Debug)]
pub struct Item<'a> {
    /// Batch or entry.
    pub kind: ItemKind,
    /// The file it came from.
    pub file: &'a Path,
    /// The file's kind.
    pub file_kind: FileKind,
    /// Byte offset of the item in the file.
    pub position: u64,
    /// The item's bytes (buffer 0 of its tree; node offsets are `position` + index).
    pub bytes: &'a [u8],
    /// The tree: a `RecordBatch`/`Message` node for batches, an entry node otherwise.
    /// Absent for batches read at [`Detail::Summary`] without `--verify`.
    pub node: Option<Node<'a>>,
    /// Decompressed buffers of a batch; buffer id n is `buffers[n - 1]`.
    pub buffers: Vec<&'a [u8]>,
    /// For batches: the header facts.
    pub batch: Option<BatchInfo>,
    /// The internal topic the records were decoded as, if any.
    pub topic: Option<InternalTopic>,
}

/// What receives the items and findings of a read, in file order.
pub trait Sink {
    /// One item.
    ///
    /// # Errors
    /// The writer's errors (a closed pipe ends the read).
    fn item(&mut self, it: &Item<'_>) -> io::Result<()>;
    /// One finding.
    ///
    /// # Errors
    /// The writer's errors.
    fn finding(&mut self, f: &Finding) -> io::Result<()>;
}

/// Options of a read.
#[derive(Clone, Debug, Default)]
pub struct LogOptions {
    /// The topic, overriding the folder name (`--topic`).
    pub topic: Option<String>,
    /// Check CRCs, offsets, indexes and snapshot footers (`--verify`).
    pub verify: bool,
    /// [`Detail::Summary`]: batches are read from their header (and CRC) alone, without
    /// a tree, unless `verify` asks for every record.
    pub detail: Detail,
}

/// Counts of a whole read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Files read.
    pub files: u64,
    /// Batches read.
    pub batches: u64,
    /// Entries of other files read.
    pub entries: u64,
    /// Findings at each level: info, warning, error.
    pub findings: [u64; 3],
    /// Findings that say a file could not be read or followed ([`Finding::unreadable`]).
    pub unreadable: u64,
}

/// The topic of a partition folder's name (`__consumer_offsets-31` ->
/// `__consumer_offsets`); `None` when the name does not end in `-N`.
pub fn topic_of_folder(name: &str) -> Option<&str> {
    let (topic, part) = name.rsplit_once('-')?;
    (!topic.is_empty() && !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        .then_some(topic)
}

/// The base offset a segment-style file name starts with (`00000000000001725413.log`).
pub(crate) fn base_offset_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits: String = name.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() {
        None
    } else {
        digits.parse().ok()
    }
}

/// The files of a folder (and of its partition folders) in reading order: for each
/// folder, segment-style files by base offset (the `.log` first), then the other files
/// by name; sub-folders after, by name.
///
/// # Errors
/// The folder cannot be listed.
pub fn folder_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            dirs.push(p);
        } else if FileKind::of(&p).is_some() {
            files.push(p);
        }
    }
    files.sort_by_key(|p| {
        let kind = FileKind::of(p);
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        match (base_offset_of(p), kind) {
            (Some(o), Some(k)) => (0u8, o, k, name),
            (_, k) => (1, 0, k.unwrap_or(FileKind::Segment), name),
        }
    });
    dirs.sort();
    for d in dirs {
        files.extend(folder_files(&d)?);
    }
    Ok(files)
}

/// The internal topic of a file: `--topic` or its folder's name, and KRaft snapshots
/// always `__cluster_metadata`.
pub fn topic_of_file(path: &Path, opts: &LogOptions) -> Option<InternalTopic> {
    if FileKind::of(path) == Some(FileKind::KraftSnapshot) {
        return Some(InternalTopic::ClusterMetadata);
    }
    if let Some(t) = &opts.topic {
        return InternalTopic::from_name(t);
    }
    let folder = path.parent()?.file_name()?.to_str()?;
    InternalTopic::from_name(topic_of_folder(folder)?)
}

/// Where offsets stand in one partition folder, across its segments (`--verify`).
#[derive(Clone, Debug, Default)]
pub struct OffsetTrack {
    folder: Option<PathBuf>,
    last: Option<i64>,
}

impl OffsetTrack {
    /// Checks the next batch's offsets: backwards or overlapping is an error, a gap
    /// information (compaction and aborted transactions leave gaps).
    fn next(&mut self, file: &Path, pos: u64, b: &BatchInfo) -> Option<Finding> {
        let folder = file.parent().map(Path::to_path_buf);
        if folder != self.folder {
            self.folder = folder;
            self.last = None;
        }
        let f = |level, message| Finding {
            file: file.to_path_buf(),
            offset: pos,
            level,
            message,
            unreadable: false,
        };
        let out = match self.last {
            Some(l) if b.base_offset <= l => Some(f(
                Level::Error,
                format!(
                    "batch offsets {}..{} go back over offset {l} of an earlier batch",
                    b.base_offset, b.last_offset
                ),
            )),
            Some(l) if b.base_offset > l + 1 => Some(f(
                Level::Info,
                format!(
                    "offsets {}..{} absent (a gap: normal after compaction)",
                    l + 1,
                    b.base_offset - 1
                ),
            )),
            _ => None,
        };
        if b.last_offset < b.base_offset {
            self.last = Some(self.last.unwrap_or(i64::MIN).max(b.base_offset));
            return Some(f(
                Level::Error,
                format!(
                    "lastOffset {} before baseOffset {}",
                    b.last_offset, b.base_offset
                ),
            ));
        }
        self.last = Some(b.last_offset);
        out
    }
}

/// Reads `paths` (files and folders) in order, handing every item and finding to
/// `sink`. A file that cannot be opened is a finding; the others are still read. A file
/// reached again (a path given twice, or a folder and a file or folder inside it) is
/// read once: a warning finding says so (one for a path given again whole).
///
/// # Errors
/// The sink's errors (a closed pipe).
pub fn read_paths(
    schema: &Schema,
    paths: &[PathBuf],
    opts: &LogOptions,
    sink: &mut dyn Sink,
) -> io::Result<Totals> {
    let mut totals = Totals::default();
    let mut track = OffsetTrack::default();
    let mut counting = Counting {
        inner: sink,
        totals: &mut totals,
    };
    // Files and folders by their canonical path (a path that has none, such as one that
    // does not exist, as given without its `.` parts: `./x/` is `x`): a file is read
    // once, however many paths reach it.
    let same = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            p.components()
                .filter(|c| *c != std::path::Component::CurDir)
                .collect()
        })
    };
    let mut folders: Vec<(PathBuf, &PathBuf)> = Vec::new();
    let mut read = std::collections::HashSet::new();
    let again = |file: &Path, message: String| Finding {
        file: file.to_path_buf(),
        offset: 0,
        level: Level::Warning,
        message,
        unreadable: false,
    };
    for p in paths {
        let c = same(p);
        if let Some((d, earlier)) = folders.iter().find(|(d, _)| c.starts_with(d)) {
            let m = if *d == c {
                "given again: read once".to_string()
            } else {
                format!("inside {}, given before: read once", earlier.display())
            };
            counting.finding(&again(p, m))?;
            continue;
        }
        let list = if p.is_dir() {
            folders.push((c, p));
            match folder_files(p) {
                Ok(l) => l,
                Err(e) => {
                    counting.finding(&Finding {
                        file: p.clone(),
                        offset: 0,
                        level: Level::Error,
                        message: format!("cannot list the folder: {e}"),
                        unreadable: true,
                    })?;
                    continue;
                }
            }
        } else {
            vec![p.clone()]
        };
        let (many, mut skipped) = (list.len(), 0);
        for f in list {
            if !read.insert(same(&f)) {
                skipped += 1;
                continue;
            }
            counting.totals.files += 1;
            read_file(schema, &f, opts, &mut track, &mut counting)?;
        }
        if skipped > 0 {
            let m = if p.is_dir() {
                let were = if skipped == 1 { "was" } else { "were" };
                format!(
                    "{skipped} of its {many} files {were} read through an earlier path: read once"
                )
            } else {
                "given again: read once".to_string()
            };
            counting.finding(&again(p, m))?;
        }
    }
    Ok(totals)
}

/// A sink that counts what passes through it.
struct Counting<'s, 't> {
    inner: &'s mut dyn Sink,
    totals: &'t mut Totals,
}

impl Sink for Counting<'_, '_> {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        match it.kind {
            ItemKind::Batch => self.totals.batches += 1,
            ItemKind::Entry => self.totals.entries += 1,
        }
        self.inner.item(it)
    }
    fn finding(&mut self, f: &Finding) -> io::Result<()> {
        self.totals.findings[f.level as usize] += 1;
        self.totals.unreadable += u64::from(f.unreadable);
        self.inner.finding(f)
    }
}

/// Reads one file by its kind.
fn read_file(
    schema: &Schema,
    path: &Path,
    opts: &LogOptions,
    track: &mut OffsetTrack,
    sink: &mut dyn Sink,
) -> io::Result<()> {
    let kind = FileKind::of(path).unwrap_or(FileKind::Segment);
    let open = |p: &Path| std::fs::File::open(p);
    let fail = |e: io::Error| Finding {
        file: path.to_path_buf(),
        offset: 0,
        level: Level::Error,
        message: format!("cannot read the file: {e}"),
        unreadable: true,
    };
    match kind {
        FileKind::Segment | FileKind::KraftSnapshot => {
            let file = match open(path) {
                Ok(f) => f,
                Err(e) => return sink.finding(&fail(e)),
            };
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            let topic = topic_of_file(path, opts);
            // A KRaft snapshot's offsets start again at 0: it is checked on its own.
            let mut own = OffsetTrack::default();
            let track = if kind == FileKind::KraftSnapshot {
                &mut own
            } else {
                track
            };
            let mut r = io::BufReader::with_capacity(1 << 16, file);
            segment::read_batches(
                schema,
                &mut r,
                len,
                &segment::Where { path, kind, topic },
                opts,
                Some(track),
                sink,
            )
        }
        _ => {
            let data = match read_capped(path) {
                Ok(d) => d,
                Err(e) => return sink.finding(&fail(e)),
            };
            files::read_small(schema, path, kind, &data, opts, sink)
        }
    }
}

/// The largest index, snapshot or text file read whole (Kafka preallocates 10 MiB
/// indexes).
pub const MAX_SMALL_FILE: u64 = 64 << 20;

fn read_capped(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len > MAX_SMALL_FILE {
        return Err(io::Error::other(format!(
            "{len} bytes, more than the {MAX_SMALL_FILE} kwire reads for this kind of file"
        )));
    }
    let mut v = Vec::with_capacity(len as usize);
    f.take(MAX_SMALL_FILE).read_to_end(&mut v)?;
    Ok(v)
}

/// The topic of a file's records as a filter names it: `--topic`, the partition
/// folder's name (`foo-0` -> `foo`, any topic), `__cluster_metadata` for KRaft
/// snapshots.
pub fn topic_name_of_file<'p>(path: &'p Path, topic: Option<&'p str>) -> Option<&'p str> {
    if FileKind::of(path) == Some(FileKind::KraftSnapshot) {
        return Some(InternalTopic::ClusterMetadata.name());
    }
    if let Some(t) = topic {
        return Some(t);
    }
    topic_of_folder(path.parent()?.file_name()?.to_str()?)
}

/// A sink that hands each warning and error finding to `tell`, as the line to show
/// (`kwire: FILE: offset N: ...`), and every item and finding on to `inner`: the library
/// says nothing itself, the command line decides where the lines go (stderr).
pub struct Notify<'s, F: FnMut(String)> {
    /// Where items and findings go.
    pub inner: &'s mut dyn Sink,
    /// Gets the lines.
    pub tell: F,
}

impl<F: FnMut(String)> Sink for Notify<'_, F> {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        self.inner.item(it)
    }
    fn finding(&mut self, f: &Finding) -> io::Result<()> {
        if f.level != Level::Info {
            (self.tell)(format!("kwire: {}", f.line()));
        }
        self.inner.finding(f)
    }
}
