//! The Lua scripting engine of EVAL and EVALSHA: one Lua 5.1 interpreter (the `mlua` binding,
//! vendored Lua 5.1, as Redis embeds), its script cache, and the `redis` library scripts
//! call, as Redis 7.0 has them.
//!
//! - A script's body is compiled once into the function `f_<sha1 of body>` (the cache: SCRIPT
//!   LOAD/EXISTS/FLUSH, EVALSHA). A `#!lua` first line may carry `flags=` (`no-writes`...);
//!   the line is left out of the compiled code but its line feed kept, so line numbers hold.
//! - The interpreter has Redis's libraries (base, table, string, math, `bit`, `cjson`,
//!   `cmsgpack`, `struct`, and of `debug`
//!   its inspecting functions `getinfo` and `traceback` only: the rest reaches the
//!   interpreter's internals), without `loadfile`/`dofile`; its globals are read-only to scripts ("Attempt to modify a
//!   readonly table") and reading an undefined one fails as in Redis.
//! - `redis.call`/`redis.pcall` run a command through the [`Host`] the caller gives
//!   ([`Scripts::run`]): the command layer's dispatch, which this module does not know. A
//!   command's error reply is raised by `call` as the table `{err=...}` and returned by
//!   `pcall`. A script's runtime error becomes `{err="ERR <message>"}` with the script's
//!   position, replied as Redis does: `<message> script: <sha>, on @user_script:<line>.`
//! - One script runs at a time (the engine's lock); SCRIPT KILL ([`Scripts::kill`]) stops
//!   one that has not written, checked every 100,000 Lua instructions.
//!
//! Errors are replies (RESP bytes); the engine never panics on a script's doing.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod convert;
pub mod gate;
pub mod library;
pub mod structlib;

use crate::resp::Out;
use mlua::{ffi, HookTriggers, Lua, LuaOptions, StdLib, Value, Variadic, VmState};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

/// What runs a script's `redis.call`: the command line, in RESP3 when `resp3`, giving its
/// reply's bytes. It refuses what scripts may not run, with Redis's errors.
pub trait Host {
    /// Runs `argv` for the script.
    fn call(&mut self, argv: &[Vec<u8>], resp3: bool) -> Vec<u8>;

    /// `redis.acl_check_cmd`: whether the script's user may run `argv`, or the error text
    /// (with its code) when `argv` names no command.
    fn acl_check(&mut self, argv: &[Vec<u8>]) -> Result<bool, String>;

    /// The script replied with an error of its own (`redis.error_reply`, a runtime error,
    /// not a command's error passed on: that one was counted when the command failed), as
    /// Redis counts it in INFO's error statistics. `reply` is the error's text.
    fn script_error(&mut self, reply: &str) {
        let _ = reply;
    }
}

/// A script's `#!lua` flags (Redis 7.0's names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// A shebang line was given (otherwise the script runs in EVAL's compatibility mode).
    pub shebang: bool,
    /// `no-writes`: the script may not write.
    pub no_writes: bool,
    /// `allow-oom`: the script runs, and writes, over `maxmemory`.
    pub allow_oom: bool,
    /// `allow-stale`: the script runs on a replica whose link is down under
    /// `replica-serve-stale-data no`.
    pub allow_stale: bool,
}

impl Flags {
    /// Whether the script is refused over `maxmemory` before it starts (Redis's
    /// `scriptFlagsToCmdFlags`): declared flags, neither `allow-oom` nor `no-writes`.
    pub fn denies_oom(&self) -> bool {
        self.shebang && !self.allow_oom && !self.no_writes
    }
}

struct Cached {
    flags: Flags,
    /// The script's length in bytes (MEMORY STATS' `lua.caches`).
    len: usize,
}

/// What the scripting engine holds in memory (INFO memory, MEMORY STATS).
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptMemory {
    /// The cached scripts' bodies (EVAL, SCRIPT LOAD).
    pub cached_bytes: u64,
    /// The scripts' interpreter's heap (EVAL's, SCRIPT LOAD's).
    pub vm_bytes: u64,
    /// The functions' interpreter's heap (FUNCTION LOAD's, FCALL's).
    pub functions_vm_bytes: u64,
    /// The function libraries' code.
    pub library_bytes: u64,
    /// Function libraries loaded, and their functions.
    pub libraries: usize,
    /// See [`ScriptMemory::libraries`].
    pub functions: usize,
}

/// The scripting engine: the interpreter and its script cache.
pub struct Scripts {
    /// The scripts' interpreter (EVAL, SCRIPT LOAD); the functions have their own, as in
    /// Redis, so neither's garbage or heap figure is the other's.
    lua: Mutex<Lua>,
    /// The functions' interpreter (FUNCTION LOAD, FCALL).
    functions_lua: Mutex<Lua>,
    /// Held while a script or function runs: one runs at a time, whichever interpreter.
    turn: Mutex<()>,
    /// The interpreters' heaps when last read ([`Scripts::memory`]).
    vm_bytes: [std::sync::atomic::AtomicU64; 2],
    /// Scripts and functions run (the collector's steps: [`GC_PERIOD`]).
    runs: std::sync::atomic::AtomicU64,
    cache: Mutex<HashMap<String, Cached>>,
    /// A script is running.
    busy: AtomicBool,
    /// The running script's [`KILL`] and [`WROTE`] marks, in one word so that SCRIPT KILL
    /// and the script's first write decide in one order which came first: a kill answered
    /// OK is never followed by a write, a write is never followed by a kill (the
    /// interpreter's hook reads [`KILL`]).
    marks: Arc<AtomicU8>,
    /// While FUNCTION LOAD runs a library's code: when it is stopped (Redis's 500 ms).
    load_deadline: Arc<Mutex<Option<std::time::Instant>>>,
    /// FUNCTION's libraries by name (`library`).
    libraries: Mutex<std::collections::BTreeMap<String, library::Library>>,
    /// Each registered function's library, by the function's name in lower case (function
    /// names are case-insensitive, as in Redis 7.0).
    function_owner: Mutex<HashMap<String, String>>,
    /// When the running script started (`busy_ms`).
    started: Mutex<Option<std::time::Instant>>,
    /// The running script is a FUNCTION's (FCALL).
    in_function: AtomicBool,
    /// The running FUNCTION's name and command line (FUNCTION STATS).
    running: Mutex<Option<(String, Vec<Vec<u8>>)>>,
    /// Notified when a script ends ([`Scripts::until_idle_or`]).
    ended: tokio::sync::Notify,
    /// Between a script taking every key-lock stripe and the connections' commands.
    pub gate: gate::Gate,
}

/// Why SCRIPT KILL did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillRefused {
    /// No script is running.
    NotBusy,
    /// The running script has written.
    Unkillable,
}

/// The SHA1 of `body`, as 40 lower-case hex digits (`redis.sha1hex`, the cache's names).
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// The Lua code run once at start, with the interpreter's real globals: it returns the
/// runner (`xpcall` with Redis's error handler: `{err=..., source=..., line=...}`) and the
/// environment scripts run in. That environment is read-only, as Redis's patched Lua makes
/// its globals: every assignment to it, to the libraries seen through it (`redis`,
/// `string`, `bit`...), to the table `getmetatable` gives for them, and `setmetatable` or
/// `rawset` on them fail with "Attempt to modify a readonly table"; reading a global that
/// does not exist fails as Redis's does. Scripts never see the real globals table.
const PRELUDE: &str = r#"
local R = _G
local dbg = {getinfo = debug.getinfo}
local err, tostr, rawget_, setmt, rawset_, type_ = error, tostring, rawget, setmetatable, rawset, type
local err_table = function(e) if type_(e) ~= 'table' then e = {err = 'ERR ' .. tostr(e)} end return e end
local function handler(e)
  local level = 2
  local i = dbg.getinfo(level, 'nSl')
  while i and (i.what == 'C' or string.sub(i.source, 1, 8) == '@strata_') do
    level = level + 1
    i = dbg.getinfo(level, 'nSl')
  end
  e = err_table(e)
  if i then
    e['source'] = i.source
    e['line'] = i.currentline
  end
  return e
end
local function run(f)
  return xpcall(f, handler)
end
local protected = setmt({}, {__mode = 'k'})
local function refuse(level) err('Attempt to modify a readonly table', level) end
local function on_newindex() refuse(3) end
local locked = setmt({}, {__newindex = on_newindex, __metatable = false})
protected[locked] = true
local function readonly(t)
  local p = setmt({}, {__index = t, __newindex = on_newindex, __metatable = locked})
  protected[p] = true
  return p
end
local wrapped = {}
for _, name in ipairs({'redis', 'string', 'table', 'math', 'bit', 'debug', 'cjson', 'cmsgpack', 'struct'}) do
  local t = rawget_(R, name)
  if t ~= nil then wrapped[name] = readonly(t) end
end
local env
env = setmt({}, {
  __index = function(_, k)
    if k == '_G' then return env end
    local w = wrapped[k]
    if w ~= nil then return w end
    local v = rawget_(R, k)
    if v == nil then err("Script attempted to access nonexistent global variable '" .. tostr(k) .. "'", 2) end
    return v
  end,
  __newindex = on_newindex,
  __metatable = locked,
})
protected[env] = true
R.setmetatable = function(t, mt) if protected[t] then refuse(0) end return setmt(t, mt) end
R.rawset = function(t, k, v) if protected[t] then refuse(0) end return rawset_(t, k, v) end
-- Compiled chunks (string.dump's) do not load, as in Redis's Lua: bytecode is not checked.
local loadstring_, load_, byte_ = loadstring, load, string.byte
local function binary(s) return type_(s) == 'string' and byte_(s, 1) == 27 end
R.loadstring = function(s, name)
  if binary(s) then return nil, 'binary chunks are not allowed' end
  return loadstring_(s, name)
end
R.load = function(reader, name)
  local first = true
  return load_(function()
    local piece = reader()
    if first and piece ~= nil and piece ~= '' then
      first = false
      if binary(piece) then err('binary chunks are not allowed') end
    end
    return piece
  end, name)
end
return run, env
"#;

/// The registry name of the run's command primitive: `(argv...) -> reply, failed`.
const RAW_CALL: &std::ffi::CStr = c"strata_raw_call";

/// What the caller of a script stopped by SCRIPT KILL is told.
pub const KILLED_REPLY: &str = "ERR Script killed by user with SCRIPT KILL...";

/// [`Scripts::marks`]: SCRIPT KILL (or SHUTDOWN) asked the running script to stop.
const KILL: u8 = 1;
/// [`Scripts::marks`]: the running script has written; SCRIPT KILL no longer stops it.
const WROTE: u8 = 2;

/// The registry name of the flag the kill hook sets: the running script is being killed.
const KILLED: &std::ffi::CStr = c"strata_killed";

/// The registry name of the run's `redis.setresp` primitive: `(v...) -> error, failed`.
const RAW_SETRESP: &std::ffi::CStr = c"strata_raw_setresp";

/// The registry name of the running script's ACL check (`redis.acl_check_cmd`).
const RAW_ACL_CHECK: &std::ffi::CStr = c"strata_raw_acl_check";

/// Calls the run's primitive `name` with this call's arguments, leaving its result and
/// failure flag.
///
/// # Safety
/// `l` is the interpreter running a script, whose registry holds `name`.
unsafe fn raw_call_named(l: *mut ffi::lua_State, name: &std::ffi::CStr) {
    // SAFETY: the caller's contract; the stack holds the call's arguments.
    unsafe {
        let n = ffi::lua_gettop(l);
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr());
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, n, 2);
    }
}

/// [`raw_call_named`] of [`RAW_CALL`].
///
/// # Safety
/// As [`raw_call_named`].
unsafe fn raw_call(l: *mut ffi::lua_State) {
    // SAFETY: the caller's contract. A C function has LUA_MINSTACK free slots above its
    // arguments: the table and one copy at a time, then the mark, fit.
    unsafe {
        let n = ffi::lua_gettop(l);
        if n > PACK_ABOVE {
            ffi::lua_createtable(l, n, 0);
            for i in 1..=n {
                ffi::lua_pushvalue(l, i);
                ffi::lua_rawseti(l, n + 1, i.into());
            }
            ffi::lua_replace(l, 1);
            ffi::lua_settop(l, 1);
            ffi::lua_pushlightuserdata(l, packed_mark());
        }
        raw_call_named(l, RAW_CALL);
    }
}

/// Calls with more arguments than this reach the primitive as one table (and the mark): the
/// binding hands a Rust function its arguments on a stack bounded at 8,000 values, and Redis
/// takes as many as Lua's own stack holds (its test passes 8,001).
const PACK_ABOVE: c_int = 64;

/// After a primitive's call left its result and failure flag on the stack: pops the flag and
/// raises the result (its `{err=...}`) if the call failed.
///
/// # Safety
/// `l` is the interpreter, in a C function that called a primitive; no Rust value with a
/// destructor lives in the caller's frame when `lua_error` unwinds it.
#[inline(always)]
unsafe fn raise_if_failed(l: *mut ffi::lua_State) {
    // SAFETY: the caller's contract.
    unsafe {
        let failed = ffi::lua_toboolean(l, -1) != 0;
        ffi::lua_pop(l, 1);
        if failed {
            ffi::lua_error(l);
        }
    }
}

/// `redis.setresp`: raises `{err=...}` for a wrong argument, as `redis.call` does.
unsafe extern "C-unwind" fn redis_setresp(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as `redis_call`.
    unsafe {
        raw_call_named(l, RAW_SETRESP);
        raise_if_failed(l);
    }
    0
}

/// `redis.acl_check_cmd`: raises `{err=...}` for a line that names no command, as
/// `redis.call` raises.
unsafe extern "C-unwind" fn redis_acl_check(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as `redis_call`.
    unsafe {
        raw_call_named(l, RAW_ACL_CHECK);
        raise_if_failed(l);
    }
    1
}

/// `redis.call`: raises a failed command's `{err=...}`. A C function, as Redis's is, so that
/// the script's own frame is below it when it raises, even from `return redis.call(...)`
/// (a Lua function there would be a tail call and lose the script's line).
unsafe extern "C-unwind" fn redis_call(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls it with its state, inside a script run (`raw_call`); no Rust value
    // with a destructor lives in this frame when `lua_error` unwinds it.
    unsafe {
        raw_call(l);
        raise_if_failed(l);
    }
    1
}

/// The global `pcall`, as Redis 7.0 replaces it: an error raised as `{err=...}` (by
/// `redis.call`) is given to the script as its message string.
unsafe extern "C-unwind" fn script_pcall(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls it with its arguments on the stack (the function to call first).
    unsafe {
        let argc = ffi::lua_gettop(l);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_insert(l, 1);
        if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
            // A script being killed is not let to catch that (Redis's hook raises again on
            // every line): the error goes on up.
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, KILLED.as_ptr());
            let killed = ffi::lua_toboolean(l, -1) != 0;
            ffi::lua_pop(l, 1);
            if killed {
                ffi::lua_error(l);
            }
            ffi::lua_remove(l, 1);
            if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                ffi::lua_getfield(l, -1, c"err".as_ptr());
                if ffi::lua_isstring(l, -1) != 0 {
                    ffi::lua_replace(l, -2);
                } else {
                    ffi::lua_pop(l, 1);
                }
            } else if ffi::lua_type(l, -1) == ffi::LUA_TUSERDATA {
                // An error raised by a library written in Rust (`bit`, `cjson`, `cmsgpack`,
                // `struct`): its message, as the C libraries' errors are strings.
                ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"tostring".as_ptr());
                ffi::lua_insert(l, -2);
                if ffi::lua_pcall(l, 1, 1, 0) != 0 {
                    ffi::lua_pop(l, 1);
                    ffi::lua_pushstring(l, c"error".as_ptr());
                }
            }
            ffi::lua_pushboolean(l, 0);
            ffi::lua_insert(l, 1);
        }
        ffi::lua_gettop(l)
    }
}

/// `redis.pcall`: returns a failed command's `{err=...}`.
unsafe extern "C-unwind" fn redis_pcall(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: as `redis_call`.
    unsafe {
        raw_call(l);
        ffi::lua_pop(l, 1);
    }
    1
}

/// Runs between the collector's steps, and the most steps then (Redis's
/// `LUA_GC_CYCLE_PERIOD`): a step's cost spread over many runs.
const GC_PERIOD: u64 = 50;

impl Scripts {
    /// A fresh interpreter with an empty cache; `version` is the Redis version scripts see.
    pub fn new(version: &str) -> Result<Scripts, String> {
        let marks = Arc::new(AtomicU8::new(0));
        let load_deadline = Arc::new(Mutex::new(None));
        let start = || {
            new_interpreter(version, &marks, &load_deadline)
                .map_err(|e| format!("cannot start the Lua interpreter: {e}"))
        };
        let (lua, functions_lua) = (start()?, start()?);
        Ok(Scripts {
            lua: Mutex::new(lua),
            functions_lua: Mutex::new(functions_lua),
            turn: Mutex::new(()),
            vm_bytes: Default::default(),
            runs: std::sync::atomic::AtomicU64::new(0),
            cache: Mutex::new(HashMap::new()),
            busy: AtomicBool::new(false),
            marks,
            load_deadline,
            started: Mutex::new(None),
            in_function: AtomicBool::new(false),
            running: Mutex::new(None),
            ended: tokio::sync::Notify::new(),
            gate: gate::Gate::default(),
            libraries: Mutex::new(std::collections::BTreeMap::new()),
            function_owner: Mutex::new(HashMap::new()),
        })
    }

    /// Compiles and caches `body` (SCRIPT LOAD, EVAL): its SHA1, or the error reply text.
    pub fn load(&self, body: &[u8]) -> Result<String, String> {
        let sha = sha1_hex(body);
        if self.cache.lock().contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, skip) = shebang(body)?;
        let lua = self.lua.lock();
        let code = &body[skip..];
        let env: mlua::Table = lua
            .named_registry_value("strata_env")
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        let f =
            // Text only: compiled chunks are not checked by Lua 5.1's loader (as in Redis).
            lua.load(code)
                .set_name("@user_script")
                .set_mode(mlua::chunk::ChunkMode::Text)
                .set_environment(env)
                .into_function()
                .map_err(
                |e| format!("ERR Error compiling script (new function): {}", lua_message(&e)),
            )?;
        lua.set_named_registry_value(&format!("f_{sha}"), f)
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        self.cache.lock().insert(sha.clone(), Cached { flags, len: body.len() });
        Ok(sha)
    }

    /// How many scripts are cached (INFO's `number_of_cached_scripts`).
    pub fn cached_count(&self) -> usize {
        self.cache.lock().len()
    }

    /// What the scripts hold in memory. An interpreter's heap is read when it runs nothing,
    /// else it is the figure read last (a running script holds its interpreter).
    pub fn memory(&self) -> ScriptMemory {
        let heap = |i: usize, vm: &Mutex<Lua>| match vm.try_lock() {
            Some(lua) => {
                let n = lua.used_memory() as u64;
                self.vm_bytes[i].store(n, Ordering::Relaxed);
                n
            }
            None => self.vm_bytes[i].load(Ordering::Relaxed),
        };
        let vm_bytes = heap(0, &self.lua);
        let functions_vm_bytes = heap(1, &self.functions_lua);
        let cached_bytes = self.cache.lock().values().map(|c| c.len as u64).sum();
        let libs = self.libraries.lock();
        ScriptMemory {
            cached_bytes,
            vm_bytes,
            functions_vm_bytes,
            library_bytes: libs.values().map(|l| l.code.len() as u64).sum(),
            libraries: libs.len(),
            functions: libs.values().map(|l| l.functions.len()).sum(),
        }
    }

    /// Counts a run (or a library load) and, every [`GC_PERIOD`] of them, takes some steps
    /// of the collector, as Redis does, so a stream of scripts leaves no garbage growing
    /// between Lua's own full cycles.
    fn collect_some(&self, lua: &Lua) {
        if self.runs.fetch_add(1, Ordering::Relaxed) % GC_PERIOD == GC_PERIOD - 1 {
            for _ in 0..GC_PERIOD {
                if lua.gc_step().unwrap_or(true) {
                    break;
                }
            }
        }
    }

    /// Whether the script `sha` (any case) is cached.
    pub fn exists(&self, sha: &[u8]) -> bool {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.cache.lock().contains_key(&sha)
    }

    /// The flags of cached script `sha` (any case).
    pub fn flags(&self, sha: &[u8]) -> Option<Flags> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        self.cache.lock().get(&sha).map(|c| c.flags)
    }

    /// SCRIPT FLUSH: forgets every EVAL script (FUNCTION libraries stay).
    pub fn flush(&self) -> Result<(), String> {
        let shas: Vec<String> = self.cache.lock().drain().map(|(sha, _)| sha).collect();
        let lua = self.lua.lock();
        for sha in shas {
            lua.unset_named_registry_value(&format!("f_{sha}"))
                .map_err(|e| format!("ERR cannot flush the script cache: {e}"))?;
        }
        lua.gc_collect().map_err(|e| format!("ERR cannot flush the script cache: {e}"))?;
        Ok(())
    }

    /// SCRIPT KILL: asks the running script to stop.
    pub fn kill(&self) -> Result<(), KillRefused> {
        if !self.busy.load(Ordering::Acquire) {
            return Err(KillRefused::NotBusy);
        }
        let marked = self.marks.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
            (m & WROTE == 0).then_some(m | KILL)
        });
        marked.map(|_| ()).map_err(|_| KillRefused::Unkillable)
    }

    /// Whether a script is running now.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// SHUTDOWN: stops the running script, whether or not it wrote.
    pub fn stop_for_shutdown(&self) {
        if self.busy() {
            self.marks.fetch_or(KILL, Ordering::AcqRel);
        }
    }

    /// The running FUNCTION's name, command line and how long it has run (milliseconds).
    pub fn running(&self) -> Option<(String, Vec<Vec<u8>>, u128)> {
        let ms = self.busy_ms()?;
        let (name, line) = self.running.lock().clone()?;
        Some((name, line, ms))
    }

    /// Notes the FUNCTION about to run (its name and command line), for FUNCTION STATS.
    pub fn note_running(&self, name: &str, line: &[Vec<u8>]) {
        *self.running.lock() = Some((name.to_string(), line.to_vec()));
    }

    /// Whether the running script is a FUNCTION's.
    pub fn running_function(&self) -> bool {
        self.in_function.load(Ordering::Acquire)
    }

    /// Takes every key-lock stripe for a script with `lock`, through the gate
    /// ([`gate::Gate::hold_stripes`]): released when the result drops.
    pub fn hold_stripes<G>(&self, lock: impl FnOnce() -> G) -> gate::Held<'_, G> {
        self.gate.hold_stripes(&self.ended, lock)
    }

    /// Returns once no script runs or holds the key-lock stripes, or at `deadline`: a task
    /// waiting for a script (a connection's command that would wait for its locks) holds no
    /// thread meanwhile.
    pub async fn until_idle_or(&self, deadline: std::time::Instant) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the look at `busy`, so an end in between is not missed.
            ended.as_mut().enable();
            if !self.busy() && !self.gate.holding() {
                return;
            }
            let at = tokio::time::Instant::from_std(deadline);
            if tokio::time::timeout_at(at, ended).await.is_err() {
                return;
            }
        }
    }

    /// How long the running script has run (milliseconds), if one is running.
    pub fn busy_ms(&self) -> Option<u128> {
        if !self.busy() {
            return None;
        }
        self.started.lock().map(|t| t.elapsed().as_millis())
    }

    /// Notes that the running script is about to write, so SCRIPT KILL no longer stops it;
    /// false when a kill came first (the write must then not be made: the script is
    /// stopped at the hook's next look, and its caller was told it was killed).
    #[must_use]
    pub fn note_write(&self) -> bool {
        let marked = self.marks.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
            (m & KILL == 0).then_some(m | WROTE)
        });
        marked.is_ok()
    }

    /// Runs cached script `sha` with `KEYS` and `ARGV`; its reply in `out` (the client's
    /// protocol). Commands go through `host`. An uncached `sha` is NOSCRIPT.
    pub fn run(
        &self,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        host: &mut dyn Host,
        out: &mut Out,
    ) {
        if !self.exists(sha.as_bytes()) {
            out.error("NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
        self.run_with(&self.lua, sha, keys, argv, host, out, |lua, k, a| {
            let g = lua.globals();
            g.raw_set("KEYS", k)?;
            g.raw_set("ARGV", a)?;
            lua.named_registry_value::<mlua::Function>(&format!("f_{sha}"))
        });
    }

    /// Runs the function `make` gives (from interpreter `vm` and the `KEYS` and `ARGV`
    /// tables) as a script named `funcname` in error replies: the run's `redis.call`
    /// through `host`, errors as Redis replies them, the reply in `out`.
    #[allow(clippy::too_many_arguments)]
    fn run_with(
        &self,
        vm: &Mutex<Lua>,
        funcname: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        host: &mut dyn Host,
        out: &mut Out,
        make: impl FnOnce(&Lua, mlua::Table, mlua::Table) -> mlua::Result<mlua::Function>,
    ) {
        let _turn = self.turn.lock();
        let lua = vm.lock();
        // The last script's marks are cleared before this one is seen busy: a SCRIPT KILL
        // that finds it busy sets `kill` after the clearing, which so never undoes it (a
        // kill undone would be answered OK and the script run on).
        self.marks.store(0, Ordering::Release);
        *self.started.lock() = Some(std::time::Instant::now());
        self.busy.store(true, Ordering::Release);
        let _idle = Idle(self);
        let resp3 = std::cell::Cell::new(false);
        // Both `redis.call` and `redis.acl_check_cmd` reach the host; neither runs the other.
        let host = std::cell::RefCell::new(host);
        let _ = lua.set_named_registry_value("strata_killed", false);
        let result = lua.scope(|scope| {
            let strings = |items: &[Vec<u8>]| -> mlua::Result<mlua::Table> {
                lua.create_sequence_from(
                    items.iter().map(|i| lua.create_string(i)).collect::<mlua::Result<Vec<_>>>()?,
                )
            };
            let f = make(&lua, strings(keys)?, strings(argv)?)?;
            let raw = scope.create_function_mut(
                |lua, args: Variadic<Value>| -> mlua::Result<(Value, bool)> {
                    let line = match command_line(&args) {
                        Ok(l) => l,
                        Err(msg) => {
                            return Ok((Value::Table(convert::err_table(lua, &msg)?), true))
                        }
                    };
                    let reply = host.borrow_mut().call(&line, resp3.get());
                    convert::reply_to_lua(lua, &reply)
                },
            )?;
            let acl_check = scope.create_function(
                |lua, args: Variadic<Value>| -> mlua::Result<(Value, bool)> {
                    let checked = command_line(&args).and_then(|l| host.borrow_mut().acl_check(&l));
                    match checked {
                        Ok(allowed) => Ok((Value::Boolean(allowed), false)),
                        Err(msg) => Ok((Value::Table(convert::err_table(lua, &msg)?), true)),
                    }
                },
            )?;
            let setresp = scope.create_function(
                |lua, args: Variadic<Value>| -> mlua::Result<(Value, bool)> {
                    // Lua numbers: only the exact integers 2 and 3 name a version.
                    let v = match args.first() {
                        Some(Value::Number(n)) if n.fract() == 0.0 && n.abs() < 1e9 => {
                            Some(*n as i64)
                        }
                        Some(Value::Integer(n)) => Some(*n),
                        _ => None,
                    };
                    let msg = match (args.len(), v) {
                        (1, Some(v)) if v == 2 || v == 3 => {
                            resp3.set(v == 3);
                            return Ok((Value::Nil, false));
                        }
                        (1, _) => "ERR RESP version must be 2 or 3.",
                        _ => "ERR redis.setresp() requires one argument.",
                    };
                    Ok((Value::Table(convert::err_table(lua, msg)?), true))
                },
            )?;
            lua.set_named_registry_value("strata_raw_call", raw)?;
            lua.set_named_registry_value("strata_raw_setresp", setresp)?;
            lua.set_named_registry_value("strata_raw_acl_check", acl_check)?;
            let run: mlua::Function = lua.named_registry_value("strata_run")?;
            run.call::<(bool, Value)>(f)
        });
        let killed = self.marks.load(Ordering::Acquire) & KILL != 0;
        lua.globals().raw_remove("KEYS").ok();
        lua.globals().raw_remove("ARGV").ok();
        self.collect_some(&lua);
        if killed {
            out.error(KILLED_REPLY);
            return;
        }
        // The errors that are the script's own (counted in INFO's error statistics; a
        // command's error passed on by `redis.call` was counted when the command failed).
        let mut own_errors = Vec::new();
        match result {
            Ok((true, v)) => convert::lua_to_reply(&v, resp3.get(), out, &mut own_errors),
            Ok((false, Value::Table(t))) => {
                let msg: String = match t.raw_get::<Value>("err") {
                    Ok(Value::String(s)) => s.to_string_lossy(),
                    _ => "ERR execution failure".into(),
                };
                let msg = msg.replace(['\r', '\n'], " ");
                let msg = msg.strip_prefix('-').unwrap_or(&msg).to_string();
                let source: Option<String> = t.raw_get("source").ok();
                let line: Option<i64> = t.raw_get("line").ok();
                let reply = match (source, line) {
                    (Some(s), Some(l)) => format!("{msg} script: {funcname}, on {s}:{l}."),
                    _ => msg,
                };
                if !convert::from_a_command(&t) {
                    own_errors.push(reply.clone());
                }
                out.error(&reply);
            }
            Ok((false, other)) => {
                let msg = match other {
                    Value::String(s) => s.to_string_lossy(),
                    _ => "execution failure".into(),
                };
                let reply = format!("ERR Error running script {funcname}, {msg}");
                out.error(&reply);
                own_errors.push(reply);
            }
            Err(e) => {
                let reply = format!("ERR Error running script {funcname}, {}", lua_message(&e));
                out.error(&reply);
                own_errors.push(reply);
            }
        }
        let host = host.into_inner();
        for e in &own_errors {
            host.script_error(e);
        }
    }
}

/// Clears the busy flag however a run ends.
struct Idle<'a>(&'a Scripts);

impl Drop for Idle<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
        *self.0.running.lock() = None;
        self.0.ended.notify_waiters();
    }
}

/// The message of a Lua error, without mlua's decorations.
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        other => other.to_string(),
    }
}

/// The arguments of `redis.call` as a command line: strings and numbers, or Redis's error
/// text.
/// The error `redis.error_reply(text)` gives, as Redis 7.0 makes it: the text's first word
/// (after a leading `-`) is the error code when a message follows it; otherwise the code is
/// `ERR` and the text the message (`""` gives `ERR `).
fn error_reply_text(text: &str) -> String {
    let t = text.strip_prefix('-').unwrap_or(text);
    match t.split_once(' ') {
        Some((code, msg)) => format!("{code} {msg}"),
        None => format!("ERR {t}"),
    }
}

fn command_line(args: &[Value]) -> Result<Vec<Vec<u8>>, String> {
    if let [Value::Table(t), Value::LightUserData(m)] = args {
        if m.0 == packed_mark() {
            return packed_command_line(t);
        }
    }
    if args.is_empty() {
        return Err(NO_ARGUMENTS.into());
    }
    args.iter().map(|a| arg_bytes(a).ok_or_else(|| BAD_ARGUMENT.to_string())).collect()
}

const NO_ARGUMENTS: &str = "ERR Please specify at least one argument for this redis lib call";
const BAD_ARGUMENT: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// One argument of a command line, or None for a value that cannot be one.
fn arg_bytes(a: &Value) -> Option<Vec<u8>> {
    match a {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        // Numbers as C's "%.17g" (Redis's conversion, not Lua's 14 digits).
        Value::Number(n) => Some(crate::resp::writer::format_double(*n).into_bytes()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

/// The arguments `raw_call` packed into a table (a call with more than [`PACK_ABOVE`]),
/// converted one at a time: each value the binding hands out holds a slot of a bounded stack
/// until dropped.
fn packed_command_line(t: &mlua::Table) -> Result<Vec<Vec<u8>>, String> {
    let n = t.raw_len();
    let mut line = Vec::with_capacity(n);
    for i in 1..=n {
        let v: Value = t.raw_get(i).map_err(|e| format!("ERR {e}"))?;
        line.push(arg_bytes(&v).ok_or_else(|| BAD_ARGUMENT.to_string())?);
    }
    Ok(line)
}

/// The light userdata marking a packed call (scripts cannot make one).
fn packed_mark() -> *mut std::ffi::c_void {
    static MARK: u8 = 0;
    std::ptr::addr_of!(MARK) as *mut std::ffi::c_void
}

/// The flags the `#!lua` first line of `body` declares (none without one, or when the line
/// is not one EVAL takes: running it then fails with the line's error).
pub fn declared_flags(body: &[u8]) -> Flags {
    shebang(body).map(|(flags, _)| flags).unwrap_or_default()
}

/// Reads a `#!lua` first line: the flags and how many bytes to leave out of the code (the
/// line's text, not its line feed), or Redis's error reply text.
fn shebang(body: &[u8]) -> Result<(Flags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::default(), 0));
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = Flags { shebang: true, ..Flags::default() };
    for p in parts {
        let Some(list) = p.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {p}"));
        };
        for f in list.split(',').filter(|f| !f.is_empty()) {
            match f {
                "no-writes" => flags.no_writes = true,
                "allow-oom" => flags.allow_oom = true,
                "allow-stale" => flags.allow_stale = true,
                "no-cluster" | "allow-cross-slot-keys" => {}
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    Ok((flags, end))
}

/// A new interpreter with Redis's libraries, the `redis` table and protected globals.
fn new_interpreter(
    version: &str,
    marks: &Arc<AtomicU8>,
    load_deadline: &Arc<Mutex<Option<std::time::Instant>>>,
) -> mlua::Result<Lua> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
    // SAFETY: the debug library can reach the interpreter's registry and the binding's own
    // values through it; scripts never see it whole: below, `debug` is replaced by a table of
    // its inspecting functions only (what the error handler uses, and tracebacks).
    let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::default()) };
    let g = lua.globals();
    for unsafe_fn in ["loadfile", "dofile", "print"] {
        g.raw_remove(unsafe_fn)?;
    }
    bit::install(&lua)?;
    cjson::install(&lua)?;
    cmsgpack::install(&lua)?;
    structlib::install(&lua)?;
    let redis = lua.create_table()?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: Variadic<Value>| match (args.len(), args.first()) {
            (1, Some(Value::String(s))) => lua.create_string(sha1_hex(&s.as_bytes())),
            (1, Some(v @ (Value::Number(_) | Value::Integer(_)))) => {
                let s = lua
                    .coerce_string(v.clone())?
                    .map(|s| s.as_bytes().to_vec())
                    .unwrap_or_default();
                lua.create_string(sha1_hex(&s))
            }
            _ => Err(mlua::Error::runtime("wrong number of arguments")),
        })?,
    )?;
    let single = |field: &'static str| {
        lua.create_function(move |lua, args: Variadic<Value>| -> mlua::Result<Value> {
            match (args.len(), args.first()) {
                (1, Some(Value::String(s))) => {
                    let t = lua.create_table()?;
                    let text = s.to_string_lossy();
                    let text = if field == "err" { error_reply_text(&text) } else { text };
                    t.raw_set(field, text)?;
                    Ok(Value::Table(t))
                }
                _ => Ok(Value::Table(convert::err_table(
                    lua,
                    "ERR wrong number or type of arguments",
                )?)),
            }
        })
    };
    redis.raw_set("error_reply", single("err")?)?;
    redis.raw_set("status_reply", single("ok")?)?;
    // Logging goes nowhere (the server keeps no log file); replication controls have
    // nothing to control (every write of a script is in its one batch).
    let nothing = lua.create_function(|_, _: Variadic<Value>| Ok(()))?;
    redis.raw_set("log", nothing.clone())?;
    redis.raw_set("set_repl", nothing.clone())?;
    redis.raw_set("breakpoint", lua.create_function(|_, _: Variadic<Value>| Ok(false))?)?;
    redis.raw_set("debug", nothing)?;
    redis.raw_set("replicate_commands", lua.create_function(|_, _: Variadic<Value>| Ok(true))?)?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, v)?;
    }
    // SAFETY: both are Lua C functions that only use the Lua stack (`raw_call`).
    unsafe {
        redis.raw_set("call", lua.create_c_function(redis_call)?)?;
        redis.raw_set("pcall", lua.create_c_function(redis_pcall)?)?;
        redis.raw_set("setresp", lua.create_c_function(redis_setresp)?)?;
        redis.raw_set("acl_check_cmd", lua.create_c_function(redis_acl_check)?)?;
        g.raw_set("pcall", lua.create_c_function(script_pcall)?)?;
    }
    redis.raw_set("REDIS_VERSION", version)?;
    redis.raw_set("REDIS_VERSION_NUM", version_num(version))?;
    g.raw_set("redis", redis)?;
    // Scripts see of `debug` only its inspecting functions (the rest reaches the
    // interpreter's internals).
    let debug: mlua::Table = g.raw_get("debug")?;
    let inspect = lua.create_table()?;
    inspect.raw_set("getinfo", debug.raw_get::<Value>("getinfo")?)?;
    inspect.raw_set("traceback", debug.raw_get::<Value>("traceback")?)?;
    let (run, env): (mlua::Function, mlua::Table) =
        lua.load(PRELUDE).set_name("@strata_prelude").call(())?;
    g.raw_set("debug", inspect)?;
    lua.set_named_registry_value("strata_run", run)?;
    lua.set_named_registry_value("strata_env", env)?;
    let marks = marks.clone();
    let load_deadline = load_deadline.clone();
    lua.set_hook(HookTriggers::new().every_nth_instruction(100_000), move |lua, _| {
        if marks.load(Ordering::Acquire) & KILL != 0 {
            lua.set_named_registry_value("strata_killed", true)?;
            return Err(mlua::Error::runtime("Script killed by user with SCRIPT KILL..."));
        }
        if load_deadline.lock().is_some_and(|d| std::time::Instant::now() >= d) {
            lua.set_named_registry_value("strata_killed", true)?;
            return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
        }
        Ok(VmState::Continue)
    })?;
    Ok(lua)
}

/// `7.2.0` as Redis's `0x070200`.
fn version_num(version: &str) -> i64 {
    version.split('.').take(3).fold(0, |n, p| n * 256 + p.parse::<i64>().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo(Vec<Vec<Vec<u8>>>);

    impl Host for Echo {
        fn acl_check(&mut self, argv: &[Vec<u8>]) -> Result<bool, String> {
            Ok(argv[0] != b"denied")
        }

        fn call(&mut self, argv: &[Vec<u8>], _resp3: bool) -> Vec<u8> {
            self.0.push(argv.to_vec());
            if argv[0] == b"fail" {
                return b"-WRONGTYPE no\r\n".to_vec();
            }
            let mut out = Out::default();
            out.bulk(&argv[argv.len() - 1]);
            out.buf
        }
    }

    fn eval(s: &Scripts, body: &str, keys: &[&str], args: &[&str]) -> String {
        let sha = match s.load(body.as_bytes()) {
            Ok(sha) => sha,
            Err(e) => return format!("-{e}"),
        };
        let k: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        let a: Vec<Vec<u8>> = args.iter().map(|k| k.as_bytes().to_vec()).collect();
        let mut out = Out::default();
        s.run(&sha, &k, &a, &mut Echo(Vec::new()), &mut out);
        String::from_utf8(out.buf).unwrap()
    }

    #[test]
    fn scripts_see_keys_and_argv_and_call_the_host() {
        let s = Scripts::new("7.2.0").unwrap();
        assert_eq!(
            eval(&s, "return {KEYS[1], ARGV[2]}", &["k"], &["a", "b"]),
            "*2\r\n$1\r\nk\r\n$1\r\nb\r\n"
        );
        assert_eq!(eval(&s, "return redis.call('get', 'x', 12)", &[], &[]), "$2\r\n12\r\n");
        assert_eq!(eval(&s, "return redis.pcall('fail')", &[], &[]), "-WRONGTYPE no\r\n");
        let sha = sha1_hex(b"return redis.call('fail')");
        assert_eq!(
            eval(&s, "return redis.call('fail')", &[], &[]),
            format!("-WRONGTYPE no script: {sha}, on @user_script:1.\r\n")
        );
        assert_eq!(
            eval(&s, "return redis.sha1hex('')", &[], &[]),
            "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"
        );
        assert!(s.exists(sha.as_bytes()) && s.exists(sha.to_uppercase().as_bytes()));
        s.flush().unwrap();
        assert!(!s.exists(sha.as_bytes()));
    }

    /// A host that counts the errors the script reports as its own.
    struct Counting(Vec<String>);

    impl Host for Counting {
        fn acl_check(&mut self, _: &[Vec<u8>]) -> Result<bool, String> {
            Ok(true)
        }

        fn call(&mut self, argv: &[Vec<u8>], _resp3: bool) -> Vec<u8> {
            if argv[0] == b"fail" {
                return b"-WRONGTYPE no\r\n".to_vec();
            }
            b"+OK\r\n".to_vec()
        }

        fn script_error(&mut self, reply: &str) {
            self.0.push(reply.to_string());
        }
    }

    #[test]
    fn error_replies_are_shaped_and_counted_as_redis_does() {
        let s = Scripts::new("7.2.0").unwrap();
        let run = |body: &str| {
            let sha = s.load(body.as_bytes()).unwrap();
            let mut out = Out::default();
            let mut host = Counting(Vec::new());
            s.run(&sha, &[], &[], &mut host, &mut out);
            (String::from_utf8(out.buf).unwrap(), host.0)
        };
        let own = |e: &str| vec![e.to_string()];
        assert_eq!(
            run("return redis.error_reply('MY_CODE a b')"),
            ("-MY_CODE a b\r\n".into(), own("MY_CODE a b"))
        );
        assert_eq!(run("return redis.error_reply('')"), ("-ERR \r\n".into(), own("ERR ")));
        assert_eq!(
            run("return redis.error_reply('-nospace')"),
            ("-ERR nospace\r\n".into(), own("ERR nospace"))
        );
        // A command's error, returned or raised, was counted when the command failed.
        assert_eq!(run("return redis.pcall('fail')"), ("-WRONGTYPE no\r\n".into(), vec![]));
        let (reply, counted) = run("return redis.call('fail')");
        assert!(reply.starts_with("-WRONGTYPE no script:") && counted.is_empty(), "{reply}");
        let (reply, counted) = run("error('boom')");
        assert!(reply.starts_with("-ERR user_script:1: boom") && counted.len() == 1, "{reply}");
    }

    #[test]
    fn pcall_gives_the_rust_libraries_errors_as_strings() {
        let s = Scripts::new("7.2.0").unwrap();
        let r =
            eval(&s, "local ok, e = pcall(cmsgpack.unpack, '\\193') return {type(e), e}", &[], &[]);
        assert!(r.starts_with("*2\r\n$6\r\nstring\r\n") && r.contains("Bad data format"), "{r}");
        let r = eval(&s, "local ok, e = pcall(struct.pack, 'q', 1) return e", &[], &[]);
        assert!(r.contains("invalid format option 'q'"), "{r}");
    }

    #[test]
    fn compiled_chunks_do_not_load() {
        let s = Scripts::new("7.2.0").unwrap();
        let r = eval(&s, "return loadstring(string.dump(function() return 1 end))()", &[], &[]);
        assert!(r.contains("attempt to call a nil value"), "{r}");
        let r = eval(
            &s,
            "local d = string.dump(function() return 1 end) \
                          return load(function() local x = d d = nil return x end)()",
            &[],
            &[],
        );
        assert!(r.contains("attempt to call a nil value"), "{r}");
        assert_eq!(eval(&s, "return loadstring('return 7')()", &[], &[]), ":7\r\n");
        // A compiled body is refused too (EVAL, SCRIPT LOAD).
        let lua = mlua::Lua::new();
        let f = lua.load("return 1").into_function().unwrap();
        let dumped = f.dump(false);
        let e = s.load(&dumped).unwrap_err();
        assert!(e.starts_with("ERR Error compiling script"), "{e}");
    }

    #[test]
    fn calls_with_thousands_of_arguments_reach_the_host_whole() {
        let s = Scripts::new("7.2.0").unwrap();
        let body = "local a = {} for i = 1, 7999 do a[i] = i end \
                    a[7999] = 'last' return redis.call('rpush', 'l', unpack(a))";
        assert_eq!(eval(&s, body, &[], &[]), "$4\r\nlast\r\n");
        // Packed or not, a bad argument is refused the same way, as is a table argument.
        let body = "local a = {} for i = 1, 100 do a[i] = i end a[50] = {} \
                    return redis.pcall('rpush', 'l', unpack(a))";
        assert!(eval(&s, body, &[], &[]).starts_with("-ERR Lua redis lib command arguments"));
        assert!(eval(&s, "return redis.pcall('get', {})", &[], &[])
            .starts_with("-ERR Lua redis lib command arguments"));
    }

    #[test]
    fn errors_carry_the_scripts_line() {
        let s = Scripts::new("7.2.0").unwrap();
        let body = "local a = 1\nerror('boom')";
        let sha = sha1_hex(body.as_bytes());
        assert_eq!(
            eval(&s, body, &[], &[]),
            format!("-ERR user_script:2: boom script: {sha}, on @user_script:2.\r\n")
        );
        assert!(eval(&s, "x = 1", &[], &[]).contains("Attempt to modify a readonly table"));
        assert!(eval(&s, "return y", &[], &[])
            .contains("Script attempted to access nonexistent global variable 'y'"));
        assert!(eval(&s, "return (", &[], &[])
            .starts_with("-ERR Error compiling script (new function): user_script:1:"));
        assert_eq!(eval(&s, "return redis.error_reply('MY err')", &[], &[]), "-MY err\r\n");
        assert_eq!(eval(&s, "return redis.status_reply('FINE')", &[], &[]), "+FINE\r\n");
        assert!(eval(&s, "return redis.call()", &[], &[])
            .starts_with("-ERR Please specify at least one argument"));
        assert!(eval(&s, "return redis.call({})", &[], &[])
            .starts_with("-ERR Lua redis lib command arguments must be strings or integers"));
    }

    #[test]
    fn shebang_flags_are_read_and_the_line_numbers_kept() {
        let s = Scripts::new("7.2.0").unwrap();
        let body = "#!lua flags=no-writes\nreturn 1";
        let sha = s.load(body.as_bytes()).unwrap();
        assert_eq!(
            s.flags(sha.as_bytes()),
            Some(Flags { shebang: true, no_writes: true, allow_oom: false, allow_stale: false })
        );
        assert_eq!(eval(&s, body, &[], &[]), ":1\r\n");
        assert!(eval(&s, "#!lua flags=bogus\nreturn 1", &[], &[])
            .contains("Unexpected flag in script shebang: bogus"));
        assert!(eval(&s, "#!python\nreturn 1", &[], &[]).contains("Unexpected engine"));
        let body = "#!lua\nerror('x')";
        assert!(eval(&s, body, &[], &[]).contains("user_script:2: x"));
    }

    /// Regression: SCRIPT KILL and a script's first write raced, each reading the other's
    /// mark before setting its own: the kill was answered OK, the write made, and the
    /// script stopped after it (a partial script, its caller told it was killed). Now
    /// exactly one of them wins, whatever the interleaving.
    #[test]
    fn a_kill_and_a_first_write_never_both_win() {
        let s = std::sync::Arc::new(Scripts::new("7.2.0").unwrap());
        let sha = s.load(b"while true do end").unwrap();
        let (mut killed, mut wrote) = (0, 0);
        for _ in 0..300 {
            let runner = {
                let (s, sha) = (s.clone(), sha.clone());
                std::thread::spawn(move || {
                    s.run(&sha, &[], &[], &mut Echo(Vec::new()), &mut Out::default());
                })
            };
            let start = std::time::Instant::now();
            while !s.busy() {
                assert!(start.elapsed() < std::time::Duration::from_secs(10), "never busy");
                std::hint::spin_loop();
            }
            let both = std::sync::Arc::new(std::sync::Barrier::new(2));
            let writer = {
                let (s, both) = (s.clone(), both.clone());
                std::thread::spawn(move || {
                    both.wait();
                    s.note_write()
                })
            };
            both.wait();
            let kill = s.kill();
            let write = writer.join().unwrap();
            match kill {
                Ok(()) => {
                    assert!(!write, "killed after its write");
                    killed += 1;
                }
                Err(KillRefused::Unkillable) => {
                    assert!(write, "unkillable without a write");
                    wrote += 1;
                    s.stop_for_shutdown();
                }
                Err(KillRefused::NotBusy) => panic!("not busy while running"),
            }
            runner.join().unwrap();
        }
        assert_eq!(killed + wrote, 300);
    }

    /// Regression: a SCRIPT KILL made the moment a script is seen busy stops it. The script
    /// used to clear the last kill after it was seen busy, so a kill landing in between was
    /// answered OK and lost, the script running on.
    #[test]
    fn a_kill_as_soon_as_a_script_is_busy_stops_it() {
        let s = std::sync::Arc::new(Scripts::new("7.2.0").unwrap());
        let sha = s.load(b"while true do end").unwrap();
        for round in 0..300 {
            let runner = {
                let (s, sha) = (s.clone(), sha.clone());
                std::thread::spawn(move || {
                    let mut out = Out::default();
                    s.run(&sha, &[], &[], &mut Echo(Vec::new()), &mut out);
                    String::from_utf8(out.buf).unwrap()
                })
            };
            let start = std::time::Instant::now();
            while s.kill().is_err() {
                assert!(start.elapsed() < std::time::Duration::from_secs(10), "never busy");
                std::hint::spin_loop();
            }
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(runner.join().unwrap()));
            let reply = rx.recv_timeout(std::time::Duration::from_secs(10));
            let reply = reply.unwrap_or_else(|_| panic!("round {round}: killed, ran on"));
            assert!(reply.contains("Script killed by user"), "{reply}");
        }
    }
}
