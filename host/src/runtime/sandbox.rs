//! The per-call store: a fresh WASI context that denies everything (no
//! preopened directories, no environment, no arguments, no network), bounded
//! guest stdout/stderr, and a resource limiter that records *which* limit a
//! guest hit so the error can say so.

use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Bytes of guest stdout/stderr kept for the log, per call.
pub const GUEST_STDIO_BYTES: usize = 64 * 1024;

/// The data of one sandboxed call's store.
pub struct SandboxState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The limiter (also records limit hits).
    pub limiter: Limiter,
    /// Guest stdout, bounded.
    pub stdout: MemoryOutputPipe,
    /// Guest stderr, bounded.
    pub stderr: MemoryOutputPipe,
    /// The call's deadline (for the error message when it is hit).
    pub timeout: std::time::Duration,
}

impl SandboxState {
    /// A deny-by-default state with a memory cap in bytes.
    pub fn new(memory_bytes: usize, timeout: std::time::Duration) -> Self {
        let stdout = MemoryOutputPipe::new(GUEST_STDIO_BYTES);
        let stderr = MemoryOutputPipe::new(GUEST_STDIO_BYTES);
        // WasiCtxBuilder::new() starts with no preopens, no env, no args and
        // no network access; we only route the guest's stdio into bounded
        // in-memory pipes so a chatty guest cannot flood our stdout (which is
        // the MCP channel in stdio mode).
        let wasi = WasiCtx::builder().stdout(stdout.clone()).stderr(stderr.clone()).build();
        SandboxState {
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter { memory_bytes, hit: None },
            stdout,
            stderr,
            timeout,
        }
    }
}

impl WasiView for SandboxState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Which resource limit stopped a plugin call (`limit` and `bound` in a
/// `plugin_limit` error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// Its linear memory (`[components.<name>] memory_mb`).
    Memory,
    /// Its tables ([`MAX_TABLE_ELEMENTS`]).
    Table,
    /// The JSON it returned (`limits.plugin_output_bytes`).
    OutputBytes,
    /// Plugin calls at once (the instance pool).
    ConcurrentCalls,
}

impl LimitKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Memory => "memory",
            LimitKind::Table => "table",
            LimitKind::OutputBytes => "output_bytes",
            LimitKind::ConcurrentCalls => "concurrent_calls",
        }
    }
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Caps a guest's memory and tables and remembers which cap it hit.
pub struct Limiter {
    memory_bytes: usize,
    /// The limit that stopped the guest, if any.
    pub hit: Option<LimitKind>,
}

/// Table elements a guest may grow to: generous for real guests (CPython
/// and SpiderMonkey need tens of thousands), small enough that a table bomb
/// stops quickly. Also the size of each table slot in the instance pool.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 18;

impl Limiter {
    /// What the hit limit was, for the error message (`memory limit of
    /// 67108864 bytes (64 MiB)`): the wasm backtrace says nothing useful.
    pub fn detail(&self) -> String {
        match self.hit {
            Some(LimitKind::Memory) => format!(
                "memory limit of {} bytes ({} MiB) per call",
                self.memory_bytes,
                self.memory_bytes >> 20
            ),
            Some(LimitKind::Table) => format!("table limit of {MAX_TABLE_ELEMENTS} elements"),
            Some(LimitKind::OutputBytes | LimitKind::ConcurrentCalls) | None => String::new(),
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.hit = Some(LimitKind::Memory);
            // An error (rather than `Ok(false)`) traps the guest right here,
            // instead of handing a runaway allocator a -1 to retry with.
            wasmtime::bail!("memory limit of {} bytes reached", self.memory_bytes);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            self.hit = Some(LimitKind::Table);
            wasmtime::bail!("table limit of {MAX_TABLE_ELEMENTS} elements reached");
        }
        Ok(true)
    }
}
