//! The KV cache as blocks, with an optional prefix cache.
//!
//! Capacity is a number of blocks of `block_size` tokens. A sequence holds *private* blocks
//! (its own, unshared) and, with prefix caching, references to *cached* blocks: full prompt
//! blocks identified by a chain hash (hash of the previous block's hash and this block's token
//! ids, as vLLM's automatic prefix caching does), shared by every sequence with the same prefix.
//! A cached block nobody references stays resident and is evicted least-recently-used only when
//! a new allocation needs the room. Usage counts private blocks plus referenced cached blocks
//! (evictable ones count as free, as vLLM's `kv_cache_usage_perc` does).

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

#[derive(Debug)]
struct Cached {
    refs: u32,
    last_used: u64,
}

#[derive(Debug)]
pub struct KvCache {
    pub total_blocks: u64,
    private_used: u64,
    cached: HashMap<u64, Cached>,
    /// Evictable cached blocks (refs == 0), oldest first.
    lru: BTreeSet<(u64, u64)>,
    tick: u64,
}

/// Chain hashes of the full blocks of a token sequence.
pub fn block_hashes(tokens: &[u64], block_size: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(tokens.len() / block_size.max(1));
    let mut parent = 0u64;
    for block in tokens.chunks_exact(block_size.max(1)) {
        // DefaultHasher::new() uses fixed keys, so hashes are the same in every run.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        parent.hash(&mut h);
        block.hash(&mut h);
        parent = h.finish();
        out.push(parent);
    }
    out
}

impl KvCache {
    pub fn new(total_blocks: u64) -> KvCache {
        KvCache {
            total_blocks,
            private_used: 0,
            cached: HashMap::new(),
            lru: BTreeSet::new(),
            tick: 0,
        }
    }

    fn free_now(&self) -> u64 {
        self.total_blocks
            .saturating_sub(self.private_used + self.cached.len() as u64)
    }

    /// Blocks that could be handed out now (free plus evictable).
    pub fn available(&self) -> u64 {
        self.free_now() + self.lru.len() as u64
    }

    /// Fraction of blocks in use (0–1).
    pub fn usage(&self) -> f64 {
        if self.total_blocks == 0 {
            return 1.0;
        }
        let in_use = self.private_used + (self.cached.len() - self.lru.len()) as u64;
        in_use as f64 / self.total_blocks as f64
    }

    /// How many leading hashes are resident (a cache lookup; takes no reference).
    pub fn lookup(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.cached.contains_key(h))
            .count()
    }

    /// Takes references on resident blocks (after a successful [`lookup`](Self::lookup)).
    pub fn acquire(&mut self, hashes: &[u64]) {
        self.tick += 1;
        for h in hashes {
            if let Some(c) = self.cached.get_mut(h) {
                if c.refs == 0 {
                    self.lru.remove(&(c.last_used, *h));
                }
                c.refs += 1;
                c.last_used = self.tick;
            }
        }
    }

    /// Drops references; blocks nobody holds become evictable.
    pub fn release(&mut self, hashes: &[u64]) {
        for h in hashes {
            self.tick += 1;
            if let Some(c) = self.cached.get_mut(h) {
                c.refs = c.refs.saturating_sub(1);
                c.last_used = self.tick;
                if c.refs == 0 {
                    self.lru.insert((c.last_used, *h));
                }
            }
        }
    }

    /// Allocates `n` private blocks, evicting LRU cached blocks if needed; false if it cannot.
    pub fn allocate(&mut self, n: u64) -> bool {
        if self.available() < n {
            return false;
        }
        while self.free_now() < n {
            let Some(&(t, h)) = self.lru.iter().next() else {
                return false;
            };
            self.lru.remove(&(t, h));
            self.cached.remove(&h);
        }
        self.private_used += n;
        true
    }

    /// Drops every cached block nobody holds (vLLM's `/reset_prefix_cache`): later lookups
    /// find only the blocks of requests still running. Returns how many were dropped.
    pub fn reset(&mut self) -> usize {
        let n = self.lru.len();
        for (_, h) in std::mem::take(&mut self.lru) {
            self.cached.remove(&h);
        }
        n
    }

    pub fn free(&mut self, n: u64) {
        self.private_used = self.private_used.saturating_sub(n);
    }

    /// Turns one private block whose content hashes to `h` into a cached block referenced by
    /// its owner. If another sequence cached the same content meanwhile, the private copy is
    /// freed and the resident one referenced instead.
    pub fn promote(&mut self, h: u64) {
        self.tick += 1;
        self.private_used = self.private_used.saturating_sub(1);
        match self.cached.get_mut(&h) {
            Some(c) => {
                if c.refs == 0 {
                    self.lru.remove(&(c.last_used, h));
                }
                c.refs += 1;
                c.last_used = self.tick;
            }
            None => {
                self.cached.insert(
                    h,
                    Cached {
                        refs: 1,
                        last_used: self.tick,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_hash_alike_and_lru_evicts_oldest() {
        let a: Vec<u64> = (0..40).collect();
        let mut b = a.clone();
        b[35] = 999; // differs in the third block only
        let (ha, hb) = (block_hashes(&a, 16), block_hashes(&b, 16));
        assert_eq!(ha.len(), 2);
        assert_eq!(ha, hb, "the first two full blocks are identical");
        let mut c = a.clone();
        c[0] = 7;
        assert_ne!(
            block_hashes(&c, 16)[1],
            ha[1],
            "a chain hash depends on every earlier token"
        );

        let mut kv = KvCache::new(4);
        assert!(kv.allocate(2));
        kv.promote(ha[0]);
        kv.promote(ha[1]);
        assert_eq!(kv.lookup(&ha), 2);
        kv.release(&ha);
        assert_eq!(kv.usage(), 0.0, "evictable blocks count as free");
        assert_eq!(kv.available(), 4);
        assert!(kv.allocate(3), "evicts one cached block");
        assert_eq!(
            kv.lookup(&ha),
            0,
            "the oldest (first) block went first, breaking the chain"
        );
        assert!(!kv.allocate(2));
    }
}
