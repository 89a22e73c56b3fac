//! A slab: a vector with reusable slots and generation counts.
//!
//! The engine keeps operations and attempts in slabs so that memory follows what is in flight,
//! not what has been simulated: a finished attempt's slot is reused by the next one. Events
//! refer to a slot together with its generation, and a slot's generation changes when it is
//! freed, so an event for an attempt that has since been freed (a timeout that lost the race
//! with its response) is recognised as stale instead of acting on the slot's new tenant.

/// A reference to a slab entry: slot and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// Index of the slot.
    pub slot: u32,
    /// Generation of the slot when the entry was inserted.
    pub generation: u32,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Entries addressed by [`Key`].
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its key. Freed slots are reused, most recent first.
    #[inline]
    pub fn insert(&mut self, value: T) -> Key {
        self.insert_with(|_| value)
    }

    /// Stores the value `make` builds from the key it will have, and returns the key.
    #[inline]
    pub fn insert_with(&mut self, make: impl FnOnce(Key) -> T) -> Key {
        self.len += 1;
        if let Some(slot) = self.free.pop() {
            let entry = &mut self.slots[slot as usize];
            let key = Key {
                slot,
                generation: entry.generation,
            };
            entry.value = Some(make(key));
            return key;
        }
        let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 entries in flight");
        let key = Key {
            slot,
            generation: 0,
        };
        self.slots.push(Slot {
            generation: 0,
            value: Some(make(key)),
        });
        key
    }

    /// The entry for `key`, if it is still the one the key was issued for.
    #[inline]
    pub fn get(&self, key: Key) -> Option<&T> {
        let entry = self.slots.get(key.slot as usize)?;
        if entry.generation == key.generation {
            entry.value.as_ref()
        } else {
            None
        }
    }

    /// Asks the processor to bring `key`'s slot into the cache, so that a later
    /// [`Slab::get`] does not wait for memory. Nothing else changes, and nothing happens off
    /// x86-64.
    #[inline]
    pub fn prefetch(&self, key: Key) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.slots.get(key.slot as usize) {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            // SAFETY: a prefetch is only a hint: it reads nothing the program sees and cannot
            // fault, and SSE, which it needs, is part of every x86-64 processor.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(slot).cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Mutable access, as [`Slab::get`].
    #[inline]
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let entry = self.slots.get_mut(key.slot as usize)?;
        if entry.generation == key.generation {
            entry.value.as_mut()
        } else {
            None
        }
    }

    /// Removes the entry for `key` and returns it; the slot's generation moves on.
    #[inline]
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let entry = self.slots.get_mut(key.slot as usize)?;
        if entry.generation != key.generation {
            return None;
        }
        let value = entry.value.take()?;
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(key.slot);
        self.len -= 1;
        Some(value)
    }

    /// Entries stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keys of all entries, in slot order.
    pub fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.slots.iter().enumerate().filter_map(|(slot, entry)| {
            entry.value.as_ref().map(|_| Key {
                slot: slot as u32,
                generation: entry.generation,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_do_not_reach_new_tenants() {
        let mut slab = Slab::default();
        let first = slab.insert("first");
        assert_eq!(slab.remove(first), Some("first"));
        let second = slab.insert("second");
        assert_eq!(second.slot, first.slot, "the slot is reused");
        assert_eq!(slab.get(first), None);
        assert_eq!(slab.remove(first), None);
        assert_eq!(slab.get(second), Some(&"second"));
        assert_eq!(slab.len(), 1);
        assert_eq!(slab.keys().collect::<Vec<_>>(), [second]);
    }

    #[test]
    fn a_value_can_know_its_own_key() {
        let mut slab = Slab::default();
        let first = slab.insert_with(|key| key);
        slab.remove(first);
        let reused = slab.insert_with(|key| key);
        assert_eq!(slab.get(reused), Some(&reused));
        assert_ne!(reused, first);
    }
}
