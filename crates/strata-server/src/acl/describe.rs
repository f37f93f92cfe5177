//! A selector's commands written back as rules (ACL LIST, ACL GETUSER, the ACL file), in the
//! form Redis gives them: `+@all` or `-@all` first (whether commands to come are allowed),
//! then the categories that fit the selector best, then single commands to make the bits
//! exact, then `+cmd|arg` first arguments.
//!
//! The categories are chosen greedily, as Redis does: each round takes the category not yet
//! used that has more commands agreeing with what is left to describe than disagreeing, the
//! fewest disagreeing first (then the most agreeing); its rule is applied to a selector
//! built from the rules written so far, and its opposite to a copy of the selector being
//! described, so the next round looks at what is left. Applying the rules written must give
//! the selector's bits exactly (checked in the tests).

use super::selector::Selector;
use super::Catalog;

/// The command rules of `selector` (module doc), space-separated.
pub fn command_rules(selector: &Selector, catalog: &dyn Catalog) -> String {
    let additive = !selector.runs_future_commands();
    let start: &[u8] = if additive { b"-@all" } else { b"+@all" };
    let mut built = Selector::new(false);
    apply(&mut built, catalog, start);
    let mut rules = vec![String::from_utf8_lossy(start).into_owned()];

    let mut left = selector.clone();
    let categories = catalog.categories();
    let mut used = vec![false; categories.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, category) in categories.iter().enumerate() {
            if used[j] {
                continue;
            }
            let (on, off) = left.count_category(catalog, category);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some(j);
                min_diff = diff;
                max_same = same;
            }
        }
        let Some(j) = best else { break };
        let (sign, inverse) = if additive { ('+', '-') } else { ('-', '+') };
        let rule = format!("{sign}@{}", categories[j]);
        apply(&mut built, catalog, rule.as_bytes());
        apply(&mut left, catalog, format!("{inverse}@{}", categories[j]).as_bytes());
        rules.push(rule);
        used[j] = true;
    }

    for &id in catalog.top_level() {
        single(selector, &mut built, catalog, id, &mut rules);
        for &sub in catalog.subcommands(id) {
            single(selector, &mut built, catalog, sub, &mut rules);
        }
        if !selector.bit(id) {
            for arg in selector.first_args_of(id) {
                let arg = String::from_utf8_lossy(arg);
                rules.push(format!("+{}|{arg}", catalog.name(id)));
            }
        }
    }
    debug_assert!(built.same_commands(selector), "rules {rules:?} do not rebuild the bits");
    rules.join(" ")
}

/// Adds the rule that makes `id`'s bit in `built` the same as in `selector`, if they differ.
fn single(
    selector: &Selector,
    built: &mut Selector,
    catalog: &dyn Catalog,
    id: usize,
    rules: &mut Vec<String>,
) {
    let on = selector.bit(id);
    if on != built.bit(id) {
        let rule = format!("{}{}", if on { '+' } else { '-' }, catalog.name(id));
        apply(built, catalog, rule.as_bytes());
        rules.push(rule);
    }
}

/// Applies a rule this module wrote: one of the catalog's own names, so never refused.
fn apply(selector: &mut Selector, catalog: &dyn Catalog, rule: &[u8]) {
    let applied = selector.apply(catalog, rule);
    debug_assert!(applied.is_ok(), "{}: {applied:?}", String::from_utf8_lossy(rule));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::acl::catalog;
    use proptest::prelude::*;

    const RULES: &[&str] = &[
        "+@all",
        "-@all",
        "allcommands",
        "nocommands",
        "+@read",
        "-@read",
        "+@write",
        "-@write",
        "+@string",
        "-@string",
        "+@admin",
        "-@admin",
        "+@dangerous",
        "-@dangerous",
        "+@slow",
        "-@slow",
        "+@fast",
        "-@fast",
        "+@connection",
        "-@scripting",
        "+get",
        "-get",
        "+set",
        "-set",
        "+config",
        "-config",
        "+config|get",
        "-config|get",
        "+config|set",
        "+client",
        "-client|kill",
        "+client|list",
        "+select|0",
        "+select|3",
        "+acl",
        "-acl|setuser",
        "-debug",
    ];

    fn built(rules: &[&str]) -> Selector {
        let mut s = Selector::new(false);
        for r in rules {
            s.apply(catalog(), r.as_bytes()).unwrap();
        }
        s
    }

    #[test]
    fn rules_read_back_in_redis_form() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "-@all"),
            (&["+@all"], "+@all"),
            (&["+@all", "-get"], "+@all -get"),
            (&["+@read", "+set"], "-@all +@read +set"),
            (&["+@all", "-@dangerous"], "+@all -@dangerous"),
            (&["+config|get", "+select|0"], "-@all +config|get +select|0"),
            (&["+@all", "-config", "+config|get"], "+@all -config +config|get"),
            (&["+get", "-@all"], "-@all"),
        ];
        for (rules, want) in cases {
            assert_eq!(command_rules(&built(rules), catalog()), *want, "{rules:?}");
        }
    }

    proptest! {
        /// Whatever rules made a selector, the rules written back rebuild its commands
        /// exactly (and write back the same again).
        #[test]
        fn written_rules_rebuild_the_selector(picks in proptest::collection::vec(0..RULES.len(), 0..12)) {
            let rules: Vec<&str> = picks.iter().map(|&i| RULES[i]).collect();
            let s = built(&rules);
            let written = command_rules(&s, catalog());
            let words: Vec<&str> = written.split(' ').collect();
            let again = built(&words);
            prop_assert!(again.same_commands(&s), "{rules:?} -> {written}");
            prop_assert_eq!(command_rules(&again, catalog()), written);
        }
    }
}
