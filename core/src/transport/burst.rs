//! How a single writer batches: it writes the first message queued, then whatever else is already queued, up to
//! [`MAX_BATCH`], and flushes once per burst, so many concurrent messages cost one syscall. The core's connection
//! writer and the fake server's both follow this rule through [`Burst`], so the simulator's servers batch exactly as
//! the client does.

/// Most messages written between two flushes: bounds how long the first of a burst waits for its flush.
pub const MAX_BATCH: usize = 128;

/// One burst: counts what was written and says whether to take another message before flushing.
#[derive(Debug, Default)]
pub struct Burst {
    written: usize,
}

impl Burst {
    /// After one message is written: the next one `ready` has at once, unless the burst is full (then flush).
    pub fn after_write<T>(&mut self, ready: impl FnOnce() -> Option<T>) -> Option<T> {
        self.written += 1;
        if self.written < MAX_BATCH { ready() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_takes_what_is_ready_up_to_the_batch() {
        let mut queue: Vec<u32> = (0..300).collect();
        let mut burst = Burst::default();
        let mut next = Some(queue.remove(0));
        let mut written = 0;
        while next.take().is_some() {
            written += 1;
            next = burst.after_write(|| (!queue.is_empty()).then(|| queue.remove(0)));
        }
        assert_eq!(written, MAX_BATCH);
        let mut burst = Burst::default();
        assert_eq!(burst.after_write(|| None::<u32>), None, "an empty queue ends the burst");
    }
}
