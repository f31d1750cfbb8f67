//! Property tests of the choice: exclusions hold for every formula, frequencies follow weights, round robin is
//! fair, an empty set is an error, retries avoid tried replicas.
//!
//! Frequency checks use a chi-square bound at z = 6 (Wilson–Hilferty), a significance near 1e-9 per case: never
//! flaky in practice, yet a 53/47 split where 50/50 is due fails it over 20 000 draws. The draws come from the
//! seeded generator, so each case is exactly reproducible.

use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use super::*;

/// The formulas under test: every built-in and one custom expression that weighs a failing replica zero.
const FORMULAS: [&str; 7] = [
    "health_weighted",
    "round_robin",
    "random",
    "least_outstanding",
    "p2c_peak_ewma",
    "best_score",
    "expr:1 - error_rate",
];

/// One replica's situation in a generated case.
#[derive(Debug, Clone, Copy)]
struct Case {
    rust: bool,
    unhealthy: bool,
    tried: bool,
    failing: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (any::<bool>(), prop::bool::weighted(0.3), prop::bool::weighted(0.3), prop::bool::weighted(0.3))
        .prop_map(|(rust, unhealthy, tried, failing)| Case { rust, unhealthy, tried, failing })
}

/// One server per replica, so each can differ in the capability matrix.
fn build(formula: &str, cases: &[Case], seed: u64) -> (Router, Vec<ReplicaId>) {
    let start = Instant::now();
    let spec: FormulaSpec = formula.parse().unwrap();
    let mut router = Router::new(RouterConfig::default(), spec.build(), SeededRng::new(seed), start);
    let servers = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            ServerEntry::new(format!("s{i}"), [format!("r{i}")])
                .with_tools(["review"])
                .with_support("language_support", [if c.rust { "rust" } else { "python" }])
        })
        .collect();
    router.sync(&mut StaticRegistry::new(servers), start);
    let ids: Vec<ReplicaId> = (0..cases.len()).map(|i| router.replica_id(&format!("r{i}")).unwrap()).collect();
    let at = start + Duration::from_secs(1);
    for (c, &id) in cases.iter().zip(&ids) {
        for _ in 0..10 {
            router.call_started(id);
            router.call_finished(id, !c.failing, Duration::from_millis(20), at);
        }
        if c.unhealthy {
            for _ in 0..3 {
                router.record_check(ProbeId { replica: id, check: 0 }, false, at);
            }
        }
    }
    router.refresh(at);
    (router, ids)
}

/// Pearson's statistic of `counts` against probabilities proportional to `weights`.
fn chi_square(counts: &[u64], weights: &[f64]) -> f64 {
    let draws: u64 = counts.iter().sum();
    let total: f64 = weights.iter().sum();
    counts
        .iter()
        .zip(weights)
        .map(|(&observed, &w)| {
            let expected = draws as f64 * w / total;
            (observed as f64 - expected).powi(2) / expected
        })
        .sum()
}

/// The chi-square quantile with `df` degrees of freedom at normal deviate `z` (Wilson–Hilferty).
fn chi_square_bound(df: usize, z: f64) -> f64 {
    let df = df.max(1) as f64;
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

const Z: f64 = 6.0;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn excluded_zero_weight_and_tried_replicas_are_never_chosen_while_others_exist(
        cases in prop::collection::vec(case(), 1..12),
        formula in 0..FORMULAS.len(),
        seed in any::<u64>(),
    ) {
        let (mut router, ids) = build(FORMULAS[formula], &cases, seed);
        let rust = [Requirement::supports("language_support", "rust")];
        let tried: Vec<ReplicaId> = cases.iter().zip(&ids).filter(|(c, _)| c.tried).map(|(_, id)| *id).collect();
        let eligible: Vec<usize> = (0..cases.len()).filter(|&i| cases[i].rust && !cases[i].unhealthy).collect();
        let untried: Vec<usize> = eligible.iter().copied().filter(|&i| !cases[i].tried).collect();
        let pool = if untried.is_empty() { &eligible } else { &untried };
        let weighted_positive = pool.iter().any(|&i| !cases[i].failing);
        for _ in 0..20 {
            let request = RouteRequest { tool: "review", requirements: &rust, tried: &tried };
            match router.route(&request) {
                Ok(id) => {
                    let i = ids.iter().position(|x| *x == id).unwrap();
                    prop_assert!(pool.contains(&i), "picked r{i}, allowed {pool:?}");
                    if FORMULAS[formula].starts_with("expr:") && weighted_positive {
                        prop_assert!(!cases[i].failing, "a zero-weight replica was chosen over a positive one");
                    }
                }
                Err(RouteError::NoCandidate { excluded, .. }) => {
                    prop_assert!(eligible.is_empty(), "no candidate although {eligible:?} were eligible");
                    prop_assert_eq!(excluded.len(), cases.len(), "every replica is accounted for");
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }

    #[test]
    fn weighted_draws_follow_the_weights(
        weights in prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.01f64..1.0], 2..10),
        seed in any::<u64>(),
    ) {
        prop_assume!(weights.iter().filter(|w| **w > 0.0).count() >= 2);
        let rng = SeededRng::new(seed);
        let mut counts = vec![0u64; weights.len()];
        for _ in 0..20_000 {
            counts[weighted_index(&weights, rng.unit()).unwrap()] += 1;
        }
        for (w, c) in weights.iter().zip(&counts) {
            if *w == 0.0 {
                prop_assert_eq!(*c, 0, "a zero weight was drawn");
            }
        }
        let positive: Vec<(u64, f64)> =
            counts.iter().zip(&weights).filter(|(_, w)| **w > 0.0).map(|(c, w)| (*c, *w)).collect();
        let (c, w): (Vec<u64>, Vec<f64>) = positive.into_iter().unzip();
        let stat = chi_square(&c, &w);
        prop_assert!(stat < chi_square_bound(c.len() - 1, Z), "chi-square {stat} for {counts:?} vs {weights:?}");
    }

    #[test]
    fn round_robin_visits_each_candidate_once_per_cycle(n in 1usize..16, cycles in 1usize..5) {
        let cases = vec![Case { rust: true, unhealthy: false, tried: false, failing: false }; n];
        let (mut router, _) = build("round_robin", &cases, 1);
        for _ in 0..cycles {
            let mut seen: Vec<ReplicaId> = (0..n).map(|_| router.route(&RouteRequest::new("review")).unwrap()).collect();
            seen.sort();
            seen.dedup();
            prop_assert_eq!(seen.len(), n);
        }
    }

    #[test]
    fn an_all_excluded_set_is_an_error_for_every_formula(n in 1usize..10, formula in 0..FORMULAS.len()) {
        let cases: Vec<Case> =
            (0..n).map(|i| Case { rust: false, unhealthy: i % 2 == 0, tried: false, failing: false }).collect();
        let (mut router, _) = build(FORMULAS[formula], &cases, 3);
        let rust = [Requirement::supports("language_support", "rust")];
        let err = router.route(&RouteRequest { tool: "review", requirements: &rust, tried: &[] }).unwrap_err();
        let RouteError::NoCandidate { excluded, .. } = err else { panic!("{err:?}") };
        prop_assert_eq!(excluded.len(), n);
        prop_assert!(excluded.iter().all(|e| matches!(e.reason, ExclusionReason::Unmet(_))), "requirements first");
    }
}

/// Through the whole router, at a fixed seed: a formula whose weight is the declared `max_concurrent` (1..=5)
/// must split 30 000 decisions 1:2:3:4:5.
#[test]
fn router_frequencies_match_the_formula_weights() {
    let start = Instant::now();
    let spec: FormulaSpec = "expr:max_concurrent".parse().unwrap();
    let mut router = Router::new(RouterConfig::default(), spec.build(), SeededRng::new(2024), start);
    let servers = (1..=5u32)
        .map(|k| {
            let mut s = ServerEntry::new(format!("s{k}"), [format!("r{k}")]).with_tools(["t"]);
            s.hints.max_concurrent_requests = Some(k);
            s
        })
        .collect();
    router.sync(&mut StaticRegistry::new(servers), start);
    let ids: Vec<ReplicaId> = (1..=5).map(|k| router.replica_id(&format!("r{k}")).unwrap()).collect();
    let mut counts = [0u64; 5];
    for _ in 0..30_000 {
        let id = router.route(&RouteRequest::new("t")).unwrap();
        counts[ids.iter().position(|x| *x == id).unwrap()] += 1;
    }
    let stat = chi_square(&counts, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert!(stat < chi_square_bound(4, Z), "chi-square {stat} for {counts:?}");
}

#[test]
fn the_chi_square_bound_rejects_a_skewed_split() {
    // 53/47 where 50/50 is expected, over 20 000 draws: the bound must be tight enough to catch it.
    assert!(chi_square(&[10_600, 9_400], &[1.0, 1.0]) > chi_square_bound(1, Z));
    assert!(chi_square(&[10_050, 9_950], &[1.0, 1.0]) < chi_square_bound(1, Z));
}
