//! The engine's instance pool, sized to the address space it gets.
//!
//! Every call gets a fresh instance (nothing leaks between calls), but its
//! memory, tables and fiber stack come from slots reserved once, instead of
//! an mmap/munmap per instantiation: on two cores those unmaps (TLB
//! shootdowns, mmap lock contention) were most of the cost of a small op. A
//! slot is reset to the module's initial image before reuse.
//!
//! The reservation is virtual address space, made when the engine is
//! created: two memory slots of 4 GiB plus guard per call, so the default
//! 256 calls need about 2 TiB. That is nothing on x86_64 (128 TiB of user
//! space) but more than an aarch64 kernel built with 39-bit virtual
//! addresses has (512 GiB, as on some Raspberry Pi and Jetson kernels), or
//! than `ulimit -v` allows. There the pool is halved until it fits with
//! [`HEADROOM`] to spare: a smaller pool only lowers how many calls run at
//! once (past it a call fails with `plugin_limit`); no pool would mean no
//! verbgate at all.

use wasmtime::Engine;

use super::sandbox;

/// Address space left free beside the pool for everything else the server
/// maps (compiled code, thread stacks, allocator arenas): a pool that fits
/// only without it would start, then fail the first large allocation.
pub const HEADROOM: usize = 2 << 30;

/// Core instances and tables the pool holds at least: one Python guest
/// alone instantiates over a dozen core modules, so a pool of one or two
/// calls sized by the per-call ratios below could never run it. These cost
/// no memory slots (the address-space hog), only small bookkeeping.
const MIN_CORE_INSTANCES: u32 = 64;
const MIN_TABLES: u32 = 16;

/// An engine whose instance pool serves `calls` concurrent plugin calls,
/// or, when the address space cannot hold that pool, the most calls (a
/// power-of-two share of `calls`) whose pool it can, with a warning.
/// Returns the engine and the number of calls it serves.
pub fn pooled_engine(calls: u32) -> anyhow::Result<(Engine, u32)> {
    let wanted = calls.max(1);
    let mut calls = wanted;
    let mut first_failure: Option<String> = None;
    loop {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(instance_pool(
            calls,
        )));
        let failure = match Engine::new(&config) {
            Ok(engine) if has_headroom() => {
                if let Some(why) = &first_failure {
                    tracing::warn!(
                        wanted,
                        serving = calls,
                        "the instance pool for {wanted} concurrent plugin calls does not fit this process's address space \
                         ({why}; a 39-bit aarch64 kernel, ulimit -v, or strict overcommit); serving {calls} at once, more \
                         fail with plugin_limit (set limits.plugin_concurrent_calls = {calls} to silence this)"
                    );
                }
                return Ok((engine, calls));
            }
            Ok(_) => {
                format!("less than {} GiB of address space would be left beside it", HEADROOM >> 30)
            }
            Err(e) if is_reservation_failure(&e) => format!("{e:#}"),
            // Anything else is not about size: halving would not help and
            // would hide it behind advice about address space.
            Err(e) => return Err(anyhow::anyhow!("cannot create the WebAssembly engine: {e:#}")),
        };
        if calls == 1 {
            return Err(anyhow::anyhow!(
                "cannot reserve address space for even one plugin call's instance (two 4 GiB memory slots plus \
                 guards, about 8.1 GiB, and {} GiB for the rest of the server): {failure}; raise this process's \
                 address-space limit (ulimit -v / RLIMIT_AS)",
                HEADROOM >> 30
            ));
        }
        first_failure.get_or_insert(failure);
        calls /= 2;
    }
}

/// Whether `e` is the pool failing to map or protect its reservation
/// (wasmtime's own context strings, checked by the e2e test that shrinks
/// the pool under `ulimit -v`).
fn is_reservation_failure(e: &wasmtime::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("pool mapping") || text.contains("stack guard page")
}

/// Whether [`HEADROOM`] of address space is still free: a PROT_NONE
/// mapping commits no memory but counts against `RLIMIT_AS` and needs a hole
/// in the address space, which is what the rest of the server will need.
fn has_headroom() -> bool {
    // SAFETY: an anonymous PROT_NONE mapping at an address of the kernel's
    // choosing touches no existing memory; it is unmapped at once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            HEADROOM,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANON,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, HEADROOM);
    }
    true
}

/// The pool for `calls` concurrent calls. A call holds an instance while
/// its guest runs or waits (at most its deadline), and, in a large pool,
/// while its program runs (map-result's instance is made ahead, see
/// [`super::Runtime::ready`]); past the pool, a call fails with
/// `plugin_limit` (`concurrent_calls`) rather than queueing.
fn instance_pool(calls: u32) -> wasmtime::PoolingAllocationConfig {
    let calls = calls.max(1);
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(calls)
        .total_stacks(calls)
        // A Rust guest holds a few core instances, tables and a memory; a
        // Python guest 14 core instances (a count, no reservation), 2
        // tables and 1 memory.
        .total_core_instances(calls.saturating_mul(16).max(MIN_CORE_INSTANCES))
        .total_memories(calls.saturating_mul(2))
        .total_tables(calls.saturating_mul(4).max(MIN_TABLES))
        .table_elements(sandbox::MAX_TABLE_ELEMENTS)
        // The per-call memory cap is the limiter's job (it says which limit
        // was hit); a slot can hold any 32-bit memory.
        .max_memory_size(4 << 30)
        // Reset the first MiBs of a memory (a Rust guest's stack and data)
        // by rewriting only the pages that were touched (PAGEMAP_SCAN,
        // Linux ≥ 6.7; else a memset) instead of decommitting them: no page
        // faults on reuse, no TLB shootdown.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(4 << 20)
        .table_keep_resident(64 << 10)
        .async_stack_keep_resident(64 << 10)
        .max_unused_warm_slots(16);
    pool
}
