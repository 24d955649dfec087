//! Property tests: random and mutated frames never panic and always end in a tree whose
//! errors carry offsets inside the frame and whose leaves still tile the frame.

use kwire::decode::{decode, DecodeOptions, Known};
use kwire::encode::{encode, minimal::minimal};
use kwire::schema::{MessageKind, Schema};
use kwire::tree::{Buffers, Message, Node};
use proptest::prelude::*;
use std::sync::OnceLock;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(Schema::embedded)
}

/// Every (api_key, version) with a request definition.
fn pairs() -> &'static Vec<(i16, i16)> {
    static P: OnceLock<Vec<(i16, i16)>> = OnceLock::new();
    P.get_or_init(|| {
        let s = schema();
        s.api_keys()
            .into_iter()
            .flat_map(|k| {
                s.versions(MessageKind::Request, k)
                    .into_iter()
                    .map(move |v| (k, v))
            })
            .collect()
    })
}

fn check(m: &Message<'_>, len: usize) -> Result<(), TestCaseError> {
    for e in m.errors() {
        let blen = m.buffer(e.buffer).len();
        prop_assert!(
            e.offset <= blen,
            "error offset {} outside buffer {} of {} bytes: {}",
            e.offset,
            e.buffer,
            blen,
            e.message
        );
    }
    let mut leaves = Vec::new();
    m.tree.walk(&mut |n: &Node<'_>, _| {
        if n.children.is_empty() && n.length > 0 && n.buffer == 0 {
            leaves.push((n.offset, n.length));
        }
    });
    leaves.sort_unstable();
    let mut pos = 0;
    for (o, l) in leaves {
        prop_assert_eq!(o, pos, "leaves do not tile the frame");
        pos = o + l;
    }
    prop_assert_eq!(pos, len);
    Ok(())
}

fn frame(key: i16, ver: i16, corr: i32, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(body.len() + 14);
    f.extend(((body.len() + 10) as u32).to_be_bytes());
    f.extend(key.to_be_bytes());
    f.extend(ver.to_be_bytes());
    f.extend(corr.to_be_bytes());
    f.extend([0, 0]); // client_id ""
    f.extend(body);
    f
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_bodies_never_panic(idx in 0usize..10_000, body in proptest::collection::vec(any::<u8>(), 0..160)) {
        let (k, v) = pairs()[idx % pairs().len()];
        let f = frame(k, v, 1, &body);
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let m = decode(schema(), &opts, &arena, &f, &Known::request());
        check(&m, f.len())?;
        let arena = Buffers::new();
        let r = decode(schema(), &opts, &arena, &f[6..], &Known::response(k, v));
        check(&r, f.len() - 6)?;
    }

    #[test]
    fn mutated_minimal_instances_never_panic(
        idx in 0usize..10_000,
        request in any::<bool>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let (k, v) = pairs()[idx % pairs().len()];
        let val = minimal(schema(), k, v, request);
        prop_assume!(!val.is_null());
        let Ok(mut f) = encode(schema(), &val) else { return Ok(()) };
        for (i, b) in &flips {
            let at = i.index(f.len());
            f[at] = *b;
        }
        let keep = 4 + cut.index(f.len() - 3);
        f.truncate(keep.min(f.len()));
        let opts = DecodeOptions::default();
        let arena = Buffers::new();
        let known = if request { Known::request() } else { Known::response(k, v) };
        let m = decode(schema(), &opts, &arena, &f, &known);
        check(&m, f.len())?;
    }
}
