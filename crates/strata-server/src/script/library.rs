//! FUNCTION libraries, as Redis 7.0 has them: Lua code that starts `#!lua name=<library>` and
//! registers named functions with `redis.register_function` when FUNCTION LOAD runs it;
//! FCALL and FCALL_RO call them with `(KEYS, ARGV)`.
//!
//! A library's code runs in an environment of its own over the scripts' (read-only) one: at
//! load it sees only the load-time `redis` (`register_function`, `log` and the constants),
//! and gets 500 ms;
//! once loaded, its functions see the real `redis` (`call`, `pcall`...). Its callbacks live
//! in the interpreter's registry table `strata_functions`, by function name. The engine keeps
//! the libraries' code; keeping it across restarts is the caller's (`commands::scripting`).

use super::{Host, Scripts};
use crate::resp::Out;
use mlua::{Function, Table, Value};

/// The flags a function may carry (Redis 7.0's).
const KNOWN_FLAGS: &[&str] =
    &["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

/// A registered function.
#[derive(Debug, Clone)]
pub struct FunctionInfo {
    /// Its name.
    pub name: String,
    /// Its description, if given.
    pub description: Option<String>,
    /// Its flags, as given.
    pub flags: Vec<String>,
}

impl FunctionInfo {
    /// It may not write (`no-writes`).
    pub fn no_writes(&self) -> bool {
        self.flags.iter().any(|f| f == "no-writes")
    }

    /// It runs, and writes, over `maxmemory` (`allow-oom`).
    pub fn allow_oom(&self) -> bool {
        self.flags.iter().any(|f| f == "allow-oom")
    }

    /// It runs on a stale replica (`allow-stale`).
    pub fn allow_stale(&self) -> bool {
        self.flags.iter().any(|f| f == "allow-stale")
    }
}

/// A loaded library.
#[derive(Debug, Clone)]
pub struct Library {
    /// Its name.
    pub name: String,
    /// Its code, as loaded.
    pub code: Vec<u8>,
    /// Its functions, in registration order.
    pub functions: Vec<FunctionInfo>,
}

/// The load-time `redis` library and the environment a library's code runs in.
const LOADER: &str = r#"
local registered, real_redis, scripts_env = ...
local function fail(msg) error({err = 'ERR ' .. msg}, 0) end
local known = {}
for _, f in ipairs({'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}) do known[f] = true end
local lib_redis = {
  log = real_redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = real_redis.REDIS_VERSION, REDIS_VERSION_NUM = real_redis.REDIS_VERSION_NUM,
}
local loading = true
lib_redis.register_function = function(...)
  -- A function that kept the load-time API cannot register more once the load is over.
  if not loading then fail('redis.register_function can only be called on FUNCTION LOAD command') end
  local n = select('#', ...)
  if n < 1 or n > 2 then fail('wrong number of arguments to redis.register_function') end
  local name, cb, flags, desc
  if n == 2 then
    name, cb = ...
    if type(name) ~= 'string' then fail('first argument to redis.register_function must be a string') end
    if type(cb) ~= 'function' then fail('second argument to redis.register_function must be a function') end
  else
    local t = ...
    if type(t) ~= 'table' then fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).') end
    for k, v in pairs(t) do
      if type(k) ~= 'string' then fail('named argument key given to redis.register_function is not a string') end
      local lk = string.lower(k)
      if lk == 'function_name' then
        if type(v) ~= 'string' then fail('function_name argument given to redis.register_function must be a string') end
        name = v
      elseif lk == 'description' then
        if type(v) ~= 'string' then fail('description argument given to redis.register_function must be a string') end
        desc = v
      elseif lk == 'callback' then
        if type(v) ~= 'function' then fail('callback argument given to redis.register_function must be a function') end
        cb = v
      elseif lk == 'flags' then
        if type(v) ~= 'table' then fail('flags argument to redis.register_function must be a table representing function flags') end
        flags = v
      else
        fail('unknown argument given to redis.register_function')
      end
    end
    if not name then fail('redis.register_function must get a function name argument') end
    if not cb then fail('redis.register_function must get a callback argument') end
  end
  local fl = {}
  if flags then
    for _, f in pairs(flags) do
      if type(f) ~= 'string' or not known[f] then fail('unknown flag given') end
      fl[#fl + 1] = f
    end
  end
  registered[#registered + 1] = {name = name, callback = cb, flags = fl, description = desc}
end
local function missing_at(k, level) error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", level) end
local function missing(_, k) missing_at(k, 3) end
setmetatable(lib_redis, {__index = missing, __newindex = function() error('Attempt to modify a readonly table', 2) end})
local env = setmetatable({}, {
  __index = function(_, k)
    if loading then
      -- The load run sees the load-time `redis` alone (Redis's load globals).
      if k == 'redis' then return lib_redis end
      missing_at(k, 3)
    end
    return scripts_env[k]
  end,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})
return env, function() loading = false end
"#;

/// Reads `#!lua name=<library>`: the name and where the code starts (the line's line feed
/// is kept, so line numbers hold), or Redis's error text. The line is split as Redis splits
/// it (quotes group and are removed: `name="foo"` names `foo`); the engine is what follows
/// `#!` up to the first space (`#! name=x` names the engine `''`).
fn metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let parts = crate::resp::args::split_args(&code[..end])
        .ok_or_else(|| "ERR Invalid library metadata".to_string())?;
    let mut parts = parts.into_iter().map(|p| String::from_utf8_lossy(&p).into_owned());
    let engine = parts.next().unwrap_or_default();
    let engine = engine.strip_prefix("#!").unwrap_or(&engine).to_string();
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(_) if name.is_some() => {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into()
                )
            }
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {p}")),
        }
    }
    let Some(name) = name else { return Err("ERR Library name was not given".into()) };
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    if !valid_name(&name) {
        return Err(
            "ERR Library names can only contain letters, numbers, or underscores(_) and must \
                    be at least one character long"
                .into(),
        );
    }
    Ok((name, end))
}

/// The library name `code`'s first line gives, or Redis's error text for a line that does
/// not name one (what FUNCTION LOAD would answer).
pub fn library_name(code: &[u8]) -> Result<String, String> {
    metadata(code).map(|(name, _)| name)
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Scripts {
    /// FUNCTION LOAD [REPLACE]: runs `code`, registering its functions; the library's name,
    /// or Redis's error text. Nothing changes on an error.
    pub fn load_library(&self, code: &[u8], replace: bool) -> Result<String, String> {
        let (name, skip) = metadata(code)?;
        let mut libs = self.libraries.lock();
        if libs.contains_key(&name) && !replace {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let lua = self.functions_lua.lock();
        // A load that fails leaves its tables and closures behind, as a run leaves its own.
        self.collect_some(&lua);
        let failed =
            |e: mlua::Error| format!("ERR Error registering functions: {}", super::lua_message(&e));
        let registered = lua.create_table().map_err(failed)?;
        let real_redis: Table = lua.globals().raw_get("redis").map_err(failed)?;
        let scripts_env: Table = lua.named_registry_value("strata_env").map_err(failed)?;
        let (env, loaded): (Table, Function) = lua
            .load(LOADER)
            .set_name("@strata_loader")
            .call((registered.clone(), real_redis, scripts_env))
            .map_err(failed)?;
        let chunk = lua
            .load(&code[skip..])
            .set_name("@user_function")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", super::lua_message(&e)))?;
        let run: Function = lua.named_registry_value("strata_run").map_err(failed)?;
        // A library's code gets 500 ms to register its functions (Redis's limit).
        lua.set_named_registry_value("strata_killed", false).map_err(failed)?;
        *self.load_deadline.lock() =
            Some(std::time::Instant::now() + std::time::Duration::from_millis(500));
        let ran = run.call::<(bool, Value)>(chunk);
        *self.load_deadline.lock() = None;
        let timed_out = lua.named_registry_value::<bool>("strata_killed").unwrap_or(false);
        lua.set_named_registry_value("strata_killed", false).map_err(failed)?;
        if timed_out {
            return Err("ERR Error registering functions: ERR FUNCTION LOAD timeout".into());
        }
        let (ok, err): (bool, Value) = ran.map_err(failed)?;
        if !ok {
            let msg = match &err {
                Value::Table(t) => match t.raw_get::<Value>("err") {
                    Ok(Value::String(s)) => s.to_string_lossy(),
                    _ => "ERR execution failure".into(),
                },
                other => format!("ERR {}", other.to_string().unwrap_or_default()),
            };
            return Err(format!("ERR Error registering functions: {msg}"));
        }
        // From here the library's `redis` is the real one.
        loaded.call::<()>(()).map_err(failed)?;
        let mut functions = Vec::new();
        let mut callbacks = Vec::new();
        for entry in registered.sequence_values::<Table>() {
            let entry = entry.map_err(failed)?;
            let fname: String = entry.raw_get("name").map_err(failed)?;
            let cb: Function = entry.raw_get("callback").map_err(failed)?;
            let flags: Vec<String> = entry
                .raw_get::<Table>("flags")
                .map_err(failed)?
                .sequence_values()
                .collect::<mlua::Result<_>>()
                .map_err(failed)?;
            let description: Option<String> = entry.raw_get("description").map_err(failed)?;
            // Redis 7.0's text (it names libraries here too).
            if !valid_name(&fname) {
                return Err(
                    "ERR Library names can only contain letters, numbers, or underscores(_) \
                            and must be at least one character long"
                        .into(),
                );
            }
            // Within a library names are compared exactly (as Redis 7.0's library dictionary
            // does); across libraries without case (below).
            if functions.iter().any(|f: &FunctionInfo| f.name == fname) {
                return Err("ERR Function already exists in the library".into());
            }
            debug_assert!(flags.iter().all(|f| KNOWN_FLAGS.contains(&f.as_str())));
            functions.push(FunctionInfo { name: fname, description, flags });
            callbacks.push(cb);
        }
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        // Names are case-insensitive across libraries (as Redis's function dictionary).
        for f in &functions {
            if let Some(owner) = self.function_owner.lock().get(&f.name.to_ascii_lowercase()) {
                if *owner != name {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        let table = Self::function_table(&lua).map_err(failed)?;
        let mut owners = self.function_owner.lock();
        let replaced = libs.remove(&name);
        if let Some(old) = &replaced {
            for f in &old.functions {
                let key = f.name.to_ascii_lowercase();
                owners.remove(&key);
                table.raw_remove(key).map_err(failed)?;
            }
        }
        for (f, cb) in functions.iter().zip(callbacks) {
            let key = f.name.to_ascii_lowercase();
            owners.insert(key.clone(), name.clone());
            table.raw_set(key, cb).map_err(failed)?;
        }
        libs.insert(name.clone(), Library { name: name.clone(), code: code.to_vec(), functions });
        if replaced.is_some() {
            // The old library's memory goes at once (Redis's functions have an interpreter
            // of their own, which INFO's `used_memory_lua` leaves out; here one interpreter
            // runs both). A load compiles code: a full collection of a script heap costs
            // less.
            let _ = lua.gc_collect();
        }
        Ok(name)
    }

    fn function_table(lua: &mlua::Lua) -> mlua::Result<Table> {
        match lua.named_registry_value::<Option<Table>>("strata_functions")? {
            Some(t) => Ok(t),
            None => {
                let t = lua.create_table()?;
                lua.set_named_registry_value("strata_functions", t.clone())?;
                Ok(t)
            }
        }
    }

    /// FUNCTION DELETE: false when there is no such library.
    pub fn delete_library(&self, name: &str) -> bool {
        let Some(lib) = self.libraries.lock().remove(name) else { return false };
        let lua = self.functions_lua.lock();
        let mut owners = self.function_owner.lock();
        if let Ok(table) = Self::function_table(&lua) {
            for f in &lib.functions {
                let key = f.name.to_ascii_lowercase();
                owners.remove(&key);
                let _ = table.raw_remove(key);
            }
        }
        // As a replaced library's (`load_library`).
        let _ = lua.gc_collect();
        true
    }

    /// FUNCTION FLUSH: every library goes.
    pub fn flush_libraries(&self) {
        let names: Vec<String> = self.libraries.lock().keys().cloned().collect();
        for n in names {
            self.delete_library(&n);
        }
    }

    /// The libraries, by name.
    pub fn libraries(&self) -> Vec<Library> {
        self.libraries.lock().values().cloned().collect()
    }

    /// The function `name` (any case, as Redis 7.0 finds functions), if registered.
    pub fn function(&self, name: &str) -> Option<FunctionInfo> {
        let lib = self.function_owner.lock().get(&name.to_ascii_lowercase()).cloned()?;
        let libs = self.libraries.lock();
        libs.get(&lib)?.functions.iter().find(|f| f.name.eq_ignore_ascii_case(name)).cloned()
    }

    /// FCALL: runs function `name` with `(KEYS, ARGV)`; its reply in `out`.
    pub fn call_function(
        &self,
        name: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        host: &mut dyn Host,
        out: &mut Out,
    ) {
        self.in_function.store(true, std::sync::atomic::Ordering::Release);
        struct Done<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, std::sync::atomic::Ordering::Release);
            }
        }
        let _done = Done(&self.in_function);
        self.run_with(&self.functions_lua, name, keys, argv, host, out, |lua, k, a| {
            let table = Self::function_table(lua)?;
            let cb: Function = table.raw_get(name.to_ascii_lowercase())?;
            lua.load("local cb, k, a = ... return function() return cb(k, a) end")
                .set_name("@strata_fcall")
                .call::<Function>((cb, k, a))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lines_split_as_redis_splits_them() {
        assert_eq!(metadata(b"#!lua name=foo\nx").unwrap(), ("foo".to_string(), 14));
        assert_eq!(metadata(b"#!lua name=\"foo\"\n").unwrap().0, "foo");
        assert_eq!(metadata(b"#!LUA   name='b_2'\n").unwrap().0, "b_2");
        assert_eq!(metadata(b"#! name=test\n").unwrap_err(), "ERR Engine '' not found");
        assert_eq!(metadata(b"#!lua\n").unwrap_err(), "ERR Library name was not given");
        assert_eq!(
            metadata(b"#!lua name=a foo=bar\n").unwrap_err(),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert_eq!(metadata(b"#!lua name=\"a\n").unwrap_err(), "ERR Invalid library metadata");
        assert_eq!(metadata(b"#!lua name=\"a\"b\n").unwrap_err(), "ERR Invalid library metadata");
        assert!(metadata(b"#!lua name=a-b\n").unwrap_err().starts_with("ERR Library names"));
    }
}
