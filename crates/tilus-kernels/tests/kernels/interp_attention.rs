//! Flash attention forward (`flash_forward`) on the CPU interpreter against the host's f64
//! attention: fixed and packed batches, causal and not, GQA and MQA, sequences of one query,
//! of ragged blocks, of more key blocks than the ring has stages (its phases flip several
//! times), queries that see no key, head dimensions 64, 128 and 256, f16 and bf16.

use half::{bf16, f16};
use tilus_bench::harness::Rng;
use tilus_kernels::attention::{
    AttentionElement, FlashForward, FlashForwardOp, FlashForwardWs, Heads, Sequences,
};

use crate::attention_reference::{assert_matches, batch, rows};
use crate::quant_reference::seed;

/// A kernel of either kind.
enum Config<T> {
    Plain(FlashForward<T>),
    Specialized(FlashForwardWs<T>),
}

impl<T: AttentionElement> Config<T> {
    fn causal(&self) -> bool {
        match self {
            Config::Plain(c) => c.causal,
            Config::Specialized(c) => c.causal,
        }
    }
}

impl<T> std::fmt::Debug for Config<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Config::Plain(c) => c.fmt(f),
            Config::Specialized(c) => c.fmt(f),
        }
    }
}

/// Runs `config` on the interpreter on random inputs and checks its output.
fn check<T: AttentionElement>(config: Config<T>, seqs: &Sequences, heads: Heads, rng: &mut Rng) {
    let (rows_q, _) = rows(seqs);
    let (hq, d) = (heads.q_heads, heads.head_dim);
    let (q, k, v) = batch::<T>(rng, seqs, heads);
    let scale = 1.5 / (d as f32).sqrt();
    let mut o = vec![T::from_f64(f64::NAN); rows_q * hq * d];
    let mut lse = vec![f32::NAN; rows_q * hq];
    let (ins, outs) = ((&q[..], &k[..], &v[..]), (&mut o[..], &mut lse[..]));
    match &config {
        Config::Plain(c) => FlashForwardOp::interpret(c, seqs, heads, scale, ins, outs),
        Config::Specialized(c) => FlashForwardOp::interpret(c, seqs, heads, scale, ins, outs),
    }
    .unwrap_or_else(|e| panic!("{config:?} {seqs:?}: {e}"));
    let what = format!("{config:?} {seqs:?}");
    let causal = config.causal();
    assert_matches(
        &what,
        (seqs, heads, scale, causal),
        (&q, &k, &v),
        (&o, &lse),
    );
}

#[test]
fn interp_flash_forward_matches_the_reference_on_a_fixed_batch_with_gqa() {
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Fixed {
        batch: 2,
        seq_q: 70,
        seq_kv: 70,
    };
    let config = FlashForward::<f16>::new(64, false).with_tiles(64, 2);
    check(Config::Plain(config), &seqs, Heads::new(2, 1, 64), &mut rng);
}

/// Packed sequences of their own lengths, causal: one query over many keys, a ragged block,
/// more queries than keys (the first rows see no key: zeros and −∞), an empty sequence of
/// queries, and 330 keys in blocks of 64 past a ring of 2 stages (its phases flip twice).
#[test]
fn interp_flash_forward_matches_the_reference_on_packed_causal_sequences() {
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 1, 71, 201, 201, 331],
        cu_kv: vec![0, 90, 160, 220, 227, 557],
    };
    let config = FlashForward::<f16>::new(64, true).with_tiles(64, 2);
    check(Config::Plain(config), &seqs, Heads::new(4, 2, 64), &mut rng);
}

/// The same batch without the mask, three stages, MQA (one key head for three query heads).
#[test]
fn interp_flash_forward_matches_the_reference_on_packed_sequences_with_mqa() {
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 1, 71, 201, 201, 331],
        cu_kv: vec![0, 90, 160, 220, 227, 557],
    };
    let config = FlashForward::<f16>::new(64, false).with_tiles(64, 3);
    check(Config::Plain(config), &seqs, Heads::new(3, 1, 64), &mut rng);
}

/// Head dimensions 128 and 256 with their default tiles (128 and 64 keys per step), causal
/// and not, and bf16.
#[test]
fn interp_flash_forward_matches_the_reference_at_every_head_dimension_and_in_bf16() {
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Fixed {
        batch: 1,
        seq_q: 100,
        seq_kv: 200,
    };
    for causal in [false, true] {
        let heads = Heads::new(2, 2, 128);
        check(
            Config::Plain(FlashForward::<f16>::new(128, causal)),
            &seqs,
            heads,
            &mut rng,
        );
        let heads = Heads::new(1, 1, 256);
        check(
            Config::Plain(FlashForward::<bf16>::new(256, causal)),
            &seqs,
            heads,
            &mut rng,
        );
    }
    let heads = Heads::new(2, 1, 64);
    check(
        Config::Plain(FlashForward::<bf16>::new(64, true)),
        &seqs,
        heads,
        &mut rng,
    );
}

/// The warp-specialized kernel on the batches above: packed causal sequences (queries that
/// see no key, more key blocks than stages), GQA and MQA, every head dimension, bf16, and
/// each schedule (the softmax under the products or not, ping-pong or not).
#[test]
fn interp_flash_forward_ws_matches_the_reference_on_every_path() {
    let mut rng = Rng::new(seed());
    let packed = Sequences::Packed {
        cu_q: vec![0, 1, 71, 201, 201, 331],
        cu_kv: vec![0, 90, 160, 220, 227, 557],
    };
    for (overlap, ping_pong) in [(true, true), (false, false), (true, false), (false, true)] {
        for causal in [true, false] {
            let config = FlashForwardWs::<f16>::new(64, causal)
                .with_tiles(64, 2)
                .with_schedule(overlap, ping_pong);
            check(
                Config::Specialized(config),
                &packed,
                Heads::new(4, 2, 64),
                &mut rng,
            );
        }
    }
    let mqa = FlashForwardWs::<bf16>::new(64, true).with_tiles(64, 3);
    check(
        Config::Specialized(mqa),
        &packed,
        Heads::new(3, 1, 64),
        &mut rng,
    );
    // a persistent grid (the interpreter's 4 multiprocessors): each block takes several
    // items, its rings and Q's barrier going on from one to the next, an empty sequence
    // among them
    for (causal, ping_pong) in [(true, false), (false, true)] {
        let config = FlashForwardWs::<f16>::new(64, causal)
            .with_tiles(64, 2)
            .with_schedule(true, ping_pong)
            .with_persistent(true);
        check(
            Config::Specialized(config),
            &packed,
            Heads::new(2, 1, 64),
            &mut rng,
        );
    }
    let fixed = Sequences::Fixed {
        batch: 1,
        seq_q: 150,
        seq_kv: 200,
    };
    for causal in [false, true] {
        let c = FlashForwardWs::<f16>::new(128, causal);
        check(
            Config::Specialized(c),
            &fixed,
            Heads::new(2, 2, 128),
            &mut rng,
        );
        let c = FlashForwardWs::<bf16>::new(256, causal);
        check(
            Config::Specialized(c),
            &fixed,
            Heads::new(1, 1, 256),
            &mut rng,
        );
    }
}

/// Calls the host API cannot take are refused before anything runs, with the rule they
/// break, and the outputs are left as they were: a scale that is not positive and finite
/// (the kernels keep maxima of raw scores), a head dimension without a kernel, query heads
/// that are not a multiple of the key heads, offsets that decrease, and buffers of the wrong
/// length.
#[test]
fn interp_flash_forward_refuses_calls_it_cannot_take_and_touches_nothing() {
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Fixed {
        batch: 1,
        seq_q: 3,
        seq_kv: 5,
    };
    let heads = Heads::new(2, 1, 64);
    let (q, k, v) = batch::<f16>(&mut rng, &seqs, heads);
    let config = FlashForward::<f16>::new(64, false);
    let refused = |seqs: &Sequences,
                   heads: Heads,
                   scale: f32,
                   (q, k, v): (&[f16], &[f16], &[f16]),
                   rule: &str| {
        let mut o = vec![f16::NAN; 3 * 2 * 64];
        let mut lse = vec![f32::NAN; 3 * 2];
        let got =
            FlashForwardOp::interpret(&config, seqs, heads, scale, (q, k, v), (&mut o, &mut lse));
        match got {
            Err(tilus_kernels::Error::Shape { message, .. }) => {
                assert!(message.contains(rule), "{message:?} does not say {rule:?}")
            }
            other => panic!("scale {scale}, {seqs:?}, {heads:?}: {other:?}, not refused"),
        }
        assert!(o.iter().all(|x| x.is_nan()) && lse.iter().all(|x| x.is_nan()));
    };
    let ins = (&q[..], &k[..], &v[..]);
    for scale in [0.0, -0.125, f32::NAN, f32::INFINITY] {
        refused(&seqs, heads, scale, ins, "positive and finite");
    }
    refused(&seqs, Heads::new(2, 1, 96), 0.1, ins, "head_dim = 96");
    refused(&seqs, Heads::new(3, 2, 64), 0.1, ins, "multiple");
    let backwards = Sequences::Packed {
        cu_q: vec![0, 3, 2],
        cu_kv: vec![0, 5, 5],
    };
    refused(&backwards, heads, 0.1, ins, "cu_q");
    refused(&seqs, heads, 0.1, (&q[1..], &k[..], &v[..]), "q");
    // the same call with a good scale runs
    let mut o = vec![f16::NAN; 3 * 2 * 64];
    let mut lse = vec![f32::NAN; 3 * 2];
    FlashForwardOp::interpret(&config, &seqs, heads, 0.1, ins, (&mut o, &mut lse)).unwrap();
    assert!(o.iter().all(|x| x.is_finite()));
}
