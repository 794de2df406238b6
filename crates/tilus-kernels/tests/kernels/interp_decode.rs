//! Decode attention (`attention::decode`) on the CPU interpreter against the host's f64
//! decode step: contiguous and paged caches (pages shorter than a step, a step, longer),
//! ragged contexts down to one position, one to eight new tokens, groups of query heads
//! whose slots fill 64 rows or not, every split count from one to past the steps a context
//! has, and a cache whose unused rows hold NaN; caches of e4m3 codes with a scale per
//! key-value head, and the append that quantizes into them.

use half::{bf16, f16};
use tilus::lowp::F8E4M3;
use tilus_bench::harness::Rng;
use tilus_kernels::attention::decode::{CacheOf, DecodeOp, Tiling};
use tilus_kernels::attention::{AttentionElement, Heads};

use crate::decode_reference::Step;
use crate::quant_reference::seed;

/// Runs one random step in `splits` splits on the interpreter and checks it.
fn check<T: AttentionElement>(
    rng: &mut Rng,
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
    splits: usize,
) {
    let tiling = Tiling {
        splits: Some(splits),
        ..Tiling::default()
    };
    check_with::<T>(rng, (queries, heads), lens, page_size, tiling);
}

/// [`check`] with the host API's choices given by `tiling`.
fn check_with<T: AttentionElement>(
    rng: &mut Rng,
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
    tiling: Tiling,
) {
    check_over::<T, T>(rng, (queries, heads), lens, page_size, tiling);
}

/// [`check_with`] over a cache of `C`.
fn check_over<T: AttentionElement, C: CacheOf<T>>(
    rng: &mut Rng,
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
    tiling: Tiling,
) {
    let step = Step::<T, C>::random(rng, (queries, heads), lens, page_size);
    let rows = lens.len() * queries * heads.q_heads;
    let mut o = vec![T::from_f64(f64::NAN); rows * heads.head_dim];
    let mut lse = vec![f32::NAN; rows];
    let scale = 1.25 / (heads.head_dim as f32).sqrt();
    let what = format!(
        "{} over {} {:?} lens {lens:?} {tiling:?}",
        T::NAME,
        C::NAME,
        step.call
    );
    let (ins, outs) = ((&step.call, tiling), (&mut o[..], &mut lse[..]));
    DecodeOp::interpret_with(ins, scale, &step.q, step.cache(), outs)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    step.assert_matches(&what, scale, (&o, &lse));
}

#[test]
fn interp_decode_matches_the_reference_on_a_contiguous_cache() {
    let mut rng = Rng::new(seed());
    // one token, four query heads per key-value head (slot 8: 8 tokens' room, one used);
    // contexts of 1, 70 and 200 positions; one split, then three (the first context's
    // second and third splits see no key)
    for splits in [1, 3] {
        check::<f16>(
            &mut rng,
            (1, Heads::new(8, 2, 64)),
            &[1, 70, 200],
            None,
            splits,
        );
    }
}

#[test]
fn interp_decode_matches_the_reference_on_pages_shorter_than_a_step() {
    let mut rng = Rng::new(seed());
    // pages of 16 (four boxes a step), three new tokens causal among themselves, GQA 2:1,
    // the last page of each context part-filled (its tail NaN)
    check::<f16>(
        &mut rng,
        (3, Heads::new(4, 2, 64)),
        &[3, 50, 131],
        Some(16),
        2,
    );
    // pages of 8, eight tokens of one head each (the slots fill 64 rows exactly)
    check::<f16>(&mut rng, (8, Heads::new(1, 1, 64)), &[9, 77], Some(8), 1);
}

#[test]
fn interp_decode_matches_the_reference_on_long_pages_in_bf16() {
    let mut rng = Rng::new(seed());
    // pages of 128 (two steps each), 12 query heads per key-value head (slots of 16: four
    // tokens a block, five tokens in two blocks of rows), head dimension 128, four splits;
    // then one split, the kernel writing the output itself
    for splits in [4, 1] {
        let heads = Heads::new(12, 1, 128);
        check::<bf16>(&mut rng, (5, heads), &[5, 300], Some(128), splits);
    }
}

#[test]
fn interp_decode_matches_the_reference_at_head_dimension_256_and_with_a_group_of_24() {
    let mut rng = Rng::new(seed());
    // a slot of 24 rows: two tokens a block, 48 of its 64 rows loaded
    check::<f16>(&mut rng, (2, Heads::new(24, 1, 64)), &[2, 90], Some(64), 2);
    check::<f16>(
        &mut rng,
        (1, Heads::new(2, 2, 256)),
        &[65, 129],
        Some(32),
        2,
    );
}

#[test]
fn interp_decode_splits_past_the_steps_and_the_default_split_agree() {
    let mut rng = Rng::new(seed());
    // more splits than a context has steps: the empty ones weigh nothing
    check::<f16>(&mut rng, (1, Heads::new(4, 1, 64)), &[100], None, 5);
    // the host API's own choice
    let step = Step::<f16>::random(&mut rng, (1, Heads::new(4, 1, 64)), &[150, 10], Some(32));
    let mut o = vec![f16::NAN; 2 * 4 * 64];
    let mut lse = vec![f32::NAN; 2 * 4];
    DecodeOp::interpret(&step.call, 0.2, &step.q, step.cache(), (&mut o, &mut lse)).unwrap();
    step.assert_matches("the default split", 0.2, (&o, &lse));
}

/// The new tokens' keys and values written into the cache: every row they land on is the
/// token's, bit for bit, and no other byte of the cache changes; then the step reads them.
/// Rows of 128 elements, and of 1536 (a chunk of 1024 and a ragged one).
#[test]
fn interp_decode_append_writes_the_new_tokens_where_the_step_reads_them() {
    let mut rng = Rng::new(seed());
    for (page_size, heads) in [
        (None, Heads::new(4, 2, 64)),
        (Some(16), Heads::new(4, 2, 64)),
        (None, Heads::new(12, 12, 128)),
    ] {
        let mut step = Step::<f16>::random(&mut rng, (3, heads), &[3, 40, 17], page_size);
        let (want_k, want_v) = (step.k.clone(), step.v.clone());
        // the new tokens' rows, taken out of the cache (NaN in their place)
        let (k_new, v_new) = step.take_new_tokens();
        DecodeOp::interpret_append(
            &step.call,
            (&k_new, &v_new),
            (&mut step.k, &mut step.v),
            (step.table.as_deref(), &step.lens, None),
        )
        .unwrap();
        let bits = |x: &[f16]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&step.k), bits(&want_k), "{page_size:?}: the keys");
        assert_eq!(bits(&step.v), bits(&want_v), "{page_size:?}: the values");
        let mut o = vec![f16::NAN; 3 * 3 * heads.q_heads * heads.head_dim];
        let mut lse = vec![f32::NAN; 3 * 3 * heads.q_heads];
        DecodeOp::interpret(&step.call, 0.2, &step.q, step.cache(), (&mut o, &mut lse)).unwrap();
        step.assert_matches("after the append", 0.2, (&o, &lse));
    }
}

/// The merge in the kernel (every block takes a ticket; the one that takes its group's last
/// weighs every split, each warp a row): ragged contexts whose short ones leave splits empty,
/// pages of 16, several tokens; the counters are back at zero after the launch (checked by
/// the host API). The interpreter runs the blocks in block order, so the last ticket is the
/// last split's here; `gpu_decode` runs it in the device's order.
#[test]
fn interp_decode_merged_by_the_last_ticket_matches_the_reference() {
    let mut rng = Rng::new(seed());
    for (queries, heads, lens, page, splits) in [
        (1, Heads::new(8, 2, 64), &[1, 70, 200][..], None, 3),
        (3, Heads::new(4, 2, 128), &[3, 50, 131][..], Some(16), 2),
        // two blocks of rows per key-value head (slots of 16: four tokens a block), each
        // with its own ticket counter
        (5, Heads::new(12, 1, 128), &[5, 300][..], Some(128), 3),
    ] {
        let tiling = Tiling {
            splits: Some(splits),
            merge: Some(true),
            ..Tiling::default()
        };
        check_with::<f16>(&mut rng, (queries, heads), lens, page, tiling);
    }
}

/// Hyperparameters the kernel does not build are refused when it is traced, with the rule.
#[test]
fn interp_decode_refuses_hyperparameters_it_does_not_build() {
    use tilus_kernels::attention::decode::DecodeAttention;
    let mut bad = DecodeAttention::<f16>::new(128, 1, 4, Some(16));
    bad.block_kv = 96;
    let Err(e) = tilus::trace(&bad, &[]) else {
        panic!("block_kv 96 traced")
    };
    let e = e.to_string();
    assert!(e.contains("block_kv 64 or 128"), "{e}");
    let mut bad = DecodeAttention::<f16>::new(128, 1, 4, None);
    bad.slot = 12;
    assert!(tilus::trace(&bad, &[]).is_err());
    // boxes of fewer than 8 rows (pages of 4)
    let mut bad = DecodeAttention::<f16>::new(128, 1, 4, Some(16));
    bad.box_rows = 4;
    assert!(tilus::trace(&bad, &[]).is_err());
    // converters: only over codes, with Q from global memory, without the merge; the
    // overlap over codes only with them (one converted copy cannot run ahead)
    let mut bad = DecodeAttention::<f16>::new(128, 1, 4, None);
    bad.converters = true;
    assert!(tilus::trace(&bad, &[]).is_err());
    let codes = DecodeAttention::<f16, F8E4M3>::new(128, 1, 4, None);
    assert!(codes.converters && tilus::trace(&codes, &[]).is_ok());
    let mut bad = codes.clone();
    bad.q_in_registers = false;
    assert!(tilus::trace(&bad, &[]).is_err());
    let mut bad = codes.clone();
    bad.merge = true;
    bad.merge_splits = 4;
    assert!(tilus::trace(&bad, &[]).is_err());
    let overlapped = codes.clone().with_overlap(true);
    assert!(tilus::trace(&overlapped, &[]).is_ok());
    let mut bad = overlapped;
    bad.converters = false;
    let Err(e) = tilus::trace(&bad, &[]) else {
        panic!("overlap over codes without converters traced")
    };
    assert!(e.to_string().contains("without converters"), "{e}");
}

/// The steps overlapped (step `j + 1`'s scores issued before step `j`'s values' product): the
/// same results on contiguous and paged caches, masked tails, splits and several tokens; the
/// interpreter checks that no product reads or writes registers another has in flight.
#[test]
fn interp_decode_with_overlapped_steps_matches_the_reference() {
    let mut rng = Rng::new(seed());
    for (queries, heads, lens, page, splits) in [
        (1, Heads::new(8, 2, 64), &[1, 70, 200][..], None, 1),
        (3, Heads::new(4, 2, 128), &[3, 50, 131][..], Some(16), 2),
        (1, Heads::new(2, 2, 256), &[65, 129][..], Some(32), 2),
    ] {
        let tiling = Tiling {
            splits: Some(splits),
            overlap: Some(true),
            ..Tiling::default()
        };
        check_with::<f16>(&mut rng, (queries, heads), lens, page, tiling);
    }
}

/// A cache of e4m3 codes with a scale per key-value head (heads of different magnitudes, so
/// that a scale of the wrong head or the keys' for the values' shows): contiguous and paged
/// (pages shorter than a step, a step, longer), ragged contexts down to one position, several
/// tokens, every head dimension, split and not (the kernel writing the output itself), f16
/// and bf16 queries, Q in registers and in shared memory; unused rows hold NaN codes.
#[test]
fn interp_decode_over_e4m3_codes_matches_the_reference() {
    let mut rng = Rng::new(seed());
    let split = |splits| Tiling {
        splits: Some(splits),
        ..Tiling::default()
    };
    check_over::<f16, F8E4M3>(
        &mut rng,
        (1, Heads::new(8, 2, 64)),
        &[1, 70, 200],
        None,
        split(3),
    );
    // Q in registers with converters (the default up to head dimension 128), without, and
    // Q in shared memory
    for (q_in_registers, converters) in [(None, None), (None, Some(false)), (Some(false), None)] {
        check_over::<f16, F8E4M3>(
            &mut rng,
            (3, Heads::new(4, 2, 128)),
            &[3, 50, 131],
            Some(16),
            Tiling {
                q_in_registers,
                converters,
                ..split(2)
            },
        );
    }
    check_over::<bf16, F8E4M3>(
        &mut rng,
        (2, Heads::new(12, 3, 128)),
        &[2, 300],
        Some(128),
        split(1),
    );
    check_over::<f16, F8E4M3>(
        &mut rng,
        (1, Heads::new(2, 2, 256)),
        &[65, 129],
        Some(64),
        split(2),
    );
}

/// The append into a cache of e4m3 codes: each new value divided by its head's scale and
/// rounded lands on the code it came from, bit for bit, no other code changes; then the
/// step reads them. A cache of codes without its scales, and scales for a cache of f16,
/// are refused before anything runs.
#[test]
fn interp_decode_append_quantizes_into_a_cache_of_e4m3_codes() {
    let mut rng = Rng::new(seed());
    // two key-value heads, then four (each head's scale read at its own place)
    for (page_size, heads) in [
        (None, Heads::new(4, 2, 64)),
        (Some(16), Heads::new(4, 2, 64)),
        (Some(16), Heads::new(8, 4, 64)),
    ] {
        let mut step = Step::<f16, F8E4M3>::random(&mut rng, (2, heads), &[2, 40, 17], page_size);
        let (want_k, want_v) = (step.k.clone(), step.v.clone());
        let (k_new, v_new) = step.take_new_tokens();
        let scales = step.scales.clone().expect("a cache of codes has scales");
        DecodeOp::interpret_append(
            &step.call,
            (&k_new, &v_new),
            (&mut step.k, &mut step.v),
            (step.table.as_deref(), &step.lens, Some(&scales)),
        )
        .unwrap();
        let codes = |x: &[F8E4M3]| x.iter().map(|c| c.0).collect::<Vec<_>>();
        assert_eq!(codes(&step.k), codes(&want_k), "{page_size:?}: the keys");
        assert_eq!(codes(&step.v), codes(&want_v), "{page_size:?}: the values");
        let mut o = vec![f16::NAN; 3 * 2 * heads.q_heads * 64];
        let mut lse = vec![f32::NAN; 3 * 2 * heads.q_heads];
        DecodeOp::interpret(&step.call, 0.2, &step.q, step.cache(), (&mut o, &mut lse)).unwrap();
        step.assert_matches("after the append", 0.2, (&o, &lse));

        // the scales left out, and given to a cache of f16
        let mut cache = step.cache();
        cache.scales = None;
        let e = DecodeOp::interpret(&step.call, 0.2, &step.q, cache, (&mut o, &mut lse))
            .expect_err("a cache of codes read without scales");
        assert!(e.to_string().contains("without its scales"), "{e}");
        let plain = Step::<f16>::random(&mut rng, (2, heads), &[2, 40, 17], page_size);
        let mut cache = plain.cache();
        cache.scales = Some(&scales);
        let e = DecodeOp::interpret(&plain.call, 0.2, &plain.q, cache, (&mut o, &mut lse))
            .expect_err("scales taken for a cache of f16");
        assert!(e.to_string().contains("scales given"), "{e}");
    }
}

/// Q read straight from global memory into registers over a cache of the queries' type (its
/// slots tiling the 64 rows: 8, 16, 32 and 64 rows), with three stages where its shared tile
/// was: several tokens (a second block of rows whose tokens run past the sequence's), the
/// last key-value head's slot past the query heads, pages and splits; the same results as the
/// reference.
#[test]
fn interp_decode_with_q_from_global_memory_matches_the_reference() {
    let mut rng = Rng::new(seed());
    for (queries, heads, lens, page, splits) in [
        (3, Heads::new(4, 2, 64), &[3, 50, 131][..], Some(16), 2),
        (5, Heads::new(12, 1, 128), &[5, 300][..], Some(128), 1),
        (1, Heads::new(6, 2, 64), &[1, 70, 200][..], None, 3),
        (2, Heads::new(32, 1, 64), &[2, 90][..], Some(64), 2),
        (1, Heads::new(64, 1, 64), &[65][..], None, 1),
    ] {
        let tiling = Tiling {
            splits: Some(splits),
            stages: Some(3),
            q_in_registers: Some(true),
            ..Tiling::default()
        };
        check_with::<f16>(&mut rng, (queries, heads), lens, page, tiling);
    }
    let tiling = Tiling {
        splits: Some(2),
        q_in_registers: Some(true),
        ..Tiling::default()
    };
    check_with::<bf16>(
        &mut rng,
        (1, Heads::new(8, 1, 128)),
        &[1, 129],
        None,
        tiling,
    );
}

/// A warp group of converters beside the products over a cache of e4m3 codes (a ring of two
/// converted copies between them): contiguous and paged, ragged contexts down to one
/// position (a split with no step), several tokens, splits, both head dimensions it takes,
/// f16 and bf16 queries; unused rows hold NaN codes.
#[test]
fn interp_decode_with_converters_matches_the_reference() {
    let mut rng = Rng::new(seed());
    let tiling = |splits| Tiling {
        splits: Some(splits),
        converters: Some(true),
        ..Tiling::default()
    };
    // (the default e4m3 test's first case runs them too: here sixteen heads over four, slots
    // of 8 rows, a context of one step exactly)
    check_over::<f16, F8E4M3>(
        &mut rng,
        (1, Heads::new(16, 4, 64)),
        &[2, 129, 64],
        None,
        tiling(3),
    );
    check_over::<bf16, F8E4M3>(
        &mut rng,
        (3, Heads::new(4, 2, 128)),
        &[3, 50, 131],
        Some(16),
        tiling(1),
    );
    check_over::<f16, F8E4M3>(
        &mut rng,
        (2, Heads::new(16, 2, 128)),
        &[2, 300],
        Some(128),
        Tiling {
            stages: Some(3),
            ..tiling(2)
        },
    );
    // the next copy's scores issued under the values' product
    for (queries, heads, lens, page, splits) in [
        (1, Heads::new(8, 2, 64), &[1, 70, 200][..], None, 3),
        (3, Heads::new(4, 2, 128), &[3, 50, 131][..], Some(16), 1),
    ] {
        let overlapped = Tiling {
            overlap: Some(true),
            ..tiling(splits)
        };
        check_over::<f16, F8E4M3>(&mut rng, (queries, heads), lens, page, overlapped);
    }
}
