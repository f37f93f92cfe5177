//! Where partitions' replicas go: the placement of a new cluster ([`initial`]) and the one a
//! rebalance moves to ([`rebalance`]) after nodes join or leave.
//!
//! Both are pure functions of their input, so every controller computes the same answer and
//! the result can be checked against golden figures. A rebalance moves as few replicas as it
//! can:
//! 1. replicas on nodes that are not active are dropped;
//! 2. each partition short of replicas gets the least loaded active nodes it lacks;
//! 3. while the most loaded node holds two replicas more than the least loaded one, one
//!    replica moves from the first to the second (the lowest partition that can take it,
//!    keeping its position in the list);
//! 4. preferred leaders (each list's first) are evened out the same way, by swapping the
//!    first replica of a partition with another of its replicas.
//!
//! So every active node ends with `floor` or `ceil` of `partitions x replicas / nodes`
//! replicas and of `partitions / nodes` preferred leaderships.

use std::collections::BTreeMap;

use strata_replication::NodeId;

/// The placement of a new cluster of `nodes` (sorted ids): partition `p`'s replicas are the
/// `replicas` nodes from position `p mod n` (wrapping), so partitions and preferred leaders
/// spread evenly.
pub fn initial(nodes: &[NodeId], partitions: u16, replicas: usize) -> Vec<Vec<NodeId>> {
    (0..partitions)
        .map(|p| (0..replicas).map(|i| nodes[(usize::from(p) + i) % nodes.len()]).collect())
        .collect()
}

/// The placement after a rebalance of `current` over the `active` nodes (sorted ids, at least
/// one), `replicas` per partition (fewer when there are fewer active nodes).
pub fn rebalance(current: &[Vec<NodeId>], active: &[NodeId], replicas: usize) -> Vec<Vec<NodeId>> {
    let r = replicas.min(active.len());
    let mut placement: Vec<Vec<NodeId>> = current
        .iter()
        .map(|ids| ids.iter().copied().filter(|id| active.contains(id)).take(r).collect())
        .collect();
    let mut load: BTreeMap<NodeId, usize> = active.iter().map(|id| (*id, 0)).collect();
    for ids in &placement {
        for id in ids {
            *load.get_mut(id).expect("active") += 1;
        }
    }
    // 2. Fill partitions short of replicas from the least loaded nodes.
    for ids in &mut placement {
        while ids.len() < r {
            let pick = load
                .iter()
                .filter(|(id, _)| !ids.contains(id))
                .min_by_key(|(id, n)| (**n, **id))
                .map(|(id, _)| *id)
                .expect("fewer replicas than active nodes");
            ids.push(pick);
            *load.get_mut(&pick).expect("active") += 1;
        }
    }
    // 3. Even out replicas.
    loop {
        let (&high, &hn) =
            load.iter().max_by_key(|(id, n)| (**n, std::cmp::Reverse(**id))).unwrap();
        let (&low, &ln) = load.iter().min_by_key(|(id, n)| (**n, **id)).unwrap();
        if hn <= ln + 1 {
            break;
        }
        let Some(ids) = placement.iter_mut().find(|ids| ids.contains(&high) && !ids.contains(&low))
        else {
            break;
        };
        let at = ids.iter().position(|id| *id == high).expect("held");
        ids[at] = low;
        *load.get_mut(&high).expect("active") -= 1;
        *load.get_mut(&low).expect("active") += 1;
    }
    // 4. Even out preferred leaders.
    let mut leads: BTreeMap<NodeId, usize> = active.iter().map(|id| (*id, 0)).collect();
    for ids in &placement {
        if let Some(first) = ids.first() {
            *leads.get_mut(first).expect("active") += 1;
        }
    }
    loop {
        let (&high, &hn) =
            leads.iter().max_by_key(|(id, n)| (**n, std::cmp::Reverse(**id))).unwrap();
        // The least leading node that is a replica of one of `high`'s partitions.
        let l = &leads;
        let candidate = placement
            .iter()
            .enumerate()
            .filter(|(_, ids)| ids.first() == Some(&high))
            .flat_map(|(p, ids)| ids[1..].iter().map(move |id| (l[id], *id, p)))
            .min();
        let Some((ln, low, p)) = candidate else { break };
        if hn <= ln + 1 {
            break;
        }
        let ids = &mut placement[p];
        let at = ids.iter().position(|id| *id == low).expect("held");
        ids.swap(0, at);
        *leads.get_mut(&high).expect("active") -= 1;
        *leads.get_mut(&low).expect("active") += 1;
    }
    placement
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: &[Vec<NodeId>], nodes: &[NodeId]) -> Vec<(NodeId, usize, usize)> {
        nodes
            .iter()
            .map(|n| {
                let held = p.iter().filter(|ids| ids.contains(n)).count();
                let led = p.iter().filter(|ids| ids.first() == Some(n)).count();
                (*n, held, led)
            })
            .collect()
    }

    fn moved(a: &[Vec<NodeId>], b: &[Vec<NodeId>]) -> usize {
        a.iter().zip(b).map(|(x, y)| y.iter().filter(|id| !x.contains(id)).count()).sum()
    }

    #[test]
    fn a_joining_node_takes_its_share_and_little_else_moves() {
        let before = initial(&[1, 2, 3], 16, 3);
        let after = rebalance(&before, &[1, 2, 3, 4], 3);
        for (n, held, led) in counts(&after, &[1, 2, 3, 4]) {
            assert!(held == 12, "node {n} holds {held}");
            assert!(led == 4, "node {n} leads {led}");
        }
        // Node 4's 12 replicas are the only ones moved.
        assert_eq!(moved(&before, &after), 12);
        assert!(after.iter().all(|ids| ids.len() == 3));
        // A second pass changes nothing.
        assert_eq!(rebalance(&after, &[1, 2, 3, 4], 3), after);
    }

    #[test]
    fn a_leaving_node_hands_its_replicas_to_the_others() {
        let before = initial(&[1, 2, 3, 4, 5], 64, 3);
        let after = rebalance(&before, &[1, 2, 3, 5], 3);
        assert!(after.iter().all(|ids| ids.len() == 3 && !ids.contains(&4)));
        for (n, held, led) in counts(&after, &[1, 2, 3, 5]) {
            assert!((48..=48).contains(&held), "node {n} holds {held}");
            assert!(led == 16, "node {n} leads {led}");
        }
        // Node 4 held 39 (64 x 3 / 5, rounded up for some): those, and no more, move.
        let held4 = before.iter().filter(|ids| ids.contains(&4)).count();
        assert_eq!(moved(&before, &after), held4);
        // Down to fewer nodes than replicas: every node holds every partition.
        let two = rebalance(&after, &[2, 5], 3);
        assert!(two.iter().all(|ids| ids.len() == 2));
        assert_eq!(counts(&two, &[2, 5]), vec![(2, 64, 32), (5, 64, 32)]);
    }

    #[test]
    fn uneven_shares_differ_by_at_most_one() {
        let before = initial(&[1, 2, 3], 10, 2);
        let after = rebalance(&before, &[1, 2, 3, 7, 8], 2);
        let c = counts(&after, &[1, 2, 3, 7, 8]);
        let (hmin, hmax) = (c.iter().map(|x| x.1).min(), c.iter().map(|x| x.1).max());
        assert_eq!((hmin, hmax), (Some(4), Some(4)));
        let (lmin, lmax) = (c.iter().map(|x| x.2).min(), c.iter().map(|x| x.2).max());
        assert_eq!((lmin, lmax), (Some(2), Some(2)));
    }
}
