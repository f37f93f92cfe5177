//! ACL users over the wire: users made and changed by ACL SETUSER and what they may run,
//! name and subscribe to; AUTH and HELLO as a user; refusals in ACL LOG; MULTI/EXEC and
//! scripts checked for their caller; users deleted with their connections; users from the
//! configuration file and an ACL file (ACL SAVE and LOAD).

use crate::common::{Raw, Reply, Server};

fn ok() -> Reply {
    Reply::Simple("OK".into())
}

fn err(text: &str) -> Reply {
    Reply::Error(text.into())
}

fn noperm_command(name: &str) -> Reply {
    err(&format!("NOPERM this user has no permissions to run the '{name}' command"))
}

fn noperm_key() -> Reply {
    err("NOPERM this user has no permissions to access one of the keys used as arguments")
}

fn noperm_channel() -> Reply {
    err("NOPERM this user has no permissions to access one of the channels used as arguments")
}

/// A connection authenticated as `user` with `pass`.
fn as_user(srv: &Server, user: &str, pass: &str) -> Raw {
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["AUTH", user, pass]), ok());
    c
}

/// The value of `field` in a map or flat key-value array reply.
fn field(reply: &Reply, name: &str) -> Reply {
    let pairs: Vec<(Reply, Reply)> = match reply {
        Reply::Map(m) => m.clone(),
        Reply::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        other => panic!("not a map: {other:?}"),
    };
    pairs.into_iter().find(|(k, _)| *k == Reply::bulk(name)).map(|(_, v)| v).unwrap()
}

#[test]
fn users_authenticate_and_run_only_what_their_rules_allow() {
    let srv = Server::start(&[]);
    let mut admin = srv.raw();
    assert_eq!(admin.cmd(&["ACL", "WHOAMI"]), Reply::bulk("default"));
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob"]), ok());
    // New users are off, with no password, command, key or channel.
    let mut c = srv.raw();
    let wrongpass = err("WRONGPASS invalid username-password pair or user is disabled.");
    assert_eq!(c.cmd(&["AUTH", "bob", ""]), wrongpass);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "on", ">p1", ">p2", "+@string", "-set"]), ok());
    assert_eq!(c.cmd(&["AUTH", "bob", "p3"]), wrongpass);
    assert_eq!(c.cmd(&["AUTH", "bob", "p2"]), ok());
    assert_eq!(c.cmd(&["ACL", "WHOAMI"]), noperm_command("acl|whoami"));
    assert_eq!(c.cmd(&["GET", "k"]), noperm_key(), "no key pattern yet");
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "~k*", "%R~ro:*"]), ok());
    // The change applies to the connection's next command.
    assert_eq!(c.cmd(&["GET", "k"]), Reply::Null);
    assert_eq!(c.cmd(&["SET", "k", "v"]), noperm_command("set"));
    assert_eq!(c.cmd(&["APPEND", "k", "v"]), Reply::Int(1));
    assert_eq!(c.cmd(&["GET", "ro:1"]), Reply::Null, "read permission reads");
    assert_eq!(c.cmd(&["APPEND", "ro:1", "v"]), noperm_key(), "but does not write");
    assert_eq!(c.cmd(&["MGET", "k", "other"]), noperm_key(), "every key is checked");
    assert_eq!(c.cmd(&["HSET", "k", "f", "v"]), noperm_command("hset"));
    // Subcommands and first arguments.
    assert_eq!(
        admin.cmd(&["ACL", "SETUSER", "bob", "+config|get", "+select|0", "+acl|whoami"]),
        ok()
    );
    assert!(matches!(c.cmd(&["CONFIG", "GET", "port"]), Reply::Array(_)));
    assert_eq!(c.cmd(&["CONFIG", "SET", "hz", "10"]), noperm_command("config|set"));
    assert_eq!(c.cmd(&["SELECT", "0"]), ok());
    assert_eq!(c.cmd(&["SELECT", "1"]), noperm_command("select"));
    assert_eq!(c.cmd(&["ACL", "WHOAMI"]), Reply::bulk("bob"));
    // Commands that run before authentication run for anyone.
    assert!(matches!(c.cmd(&["HELLO", "2"]), Reply::Array(_)));
    // A second password works; removing it stops it working.
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "<p1"]), ok());
    assert_eq!(srv.raw().cmd(&["AUTH", "bob", "p1"]), wrongpass);
    assert_eq!(
        admin.cmd(&["ACL", "SETUSER", "bob", "<p1"]),
        err("ERR Error in ACL SETUSER modifier '<p1': The password you are trying to remove from the user does not exist")
    );
    // `off`: no new authentication, the open connection goes on.
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "off"]), ok());
    assert_eq!(srv.raw().cmd(&["AUTH", "bob", "p2"]), wrongpass);
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("v"));
    // HELLO AUTH, and AUTH of the default user by its password.
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "bob", "on"]), ok());
    let mut h = srv.raw();
    assert!(matches!(h.cmd(&["HELLO", "3", "AUTH", "bob", "p2"]), Reply::Map(_)));
    assert_eq!(h.cmd(&["ACL", "WHOAMI"]), Reply::bulk("bob"));
    assert_eq!(h.cmd(&["AUTH", "default", "anything"]), ok(), "default is nopass");
    assert_eq!(h.cmd(&["ACL", "WHOAMI"]), Reply::bulk("default"));
}

#[test]
fn setuser_is_all_or_nothing_and_reads_back_as_redis_writes_it() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(
        c.cmd(&["ACL", "LIST"]),
        Reply::Array(vec![Reply::bulk("user default on nopass ~* &* +@all")])
    );
    assert_eq!(c.cmd(&["ACL", "SETUSER", "u", "on", ">pw", "~a*", "&ch", "+@hash", "+get"]), ok());
    let hash = "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4";
    let line = format!("user u on #{hash} ~a* resetchannels &ch -@all +@hash +get");
    assert_eq!(
        c.cmd(&["ACL", "LIST"]),
        Reply::Array(vec![Reply::bulk("user default on nopass ~* &* +@all"), Reply::bulk(&line)])
    );
    // A bad rule anywhere changes nothing.
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "off", "+nosuch"]),
        err("ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL")
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "off", "~x", "bogus"]),
        err("ERR Error in ACL SETUSER modifier 'bogus': Syntax error")
    );
    assert_eq!(
        c.cmd(&["ACL", "LIST"]).clone(),
        Reply::Array(vec![Reply::bulk("user default on nopass ~* &* +@all"), Reply::bulk(&line)])
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "allkeys", "~b*"]),
        err("ERR Error in ACL SETUSER modifier '~b*': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "#abc"]),
        err("ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "+select|0|1"]),
        err("ERR Error in ACL SETUSER modifier '+select|0|1': Unknown command or category name in ACL")
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "+config|get|x"]),
        err("ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported")
    );
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "a b"]),
        err("ERR Usernames can't contain spaces or null characters")
    );
    // GETUSER, with selectors written over several arguments.
    assert_eq!(c.cmd(&["ACL", "SETUSER", "u", "(~s*", "+set)", "(%W~w*", "+@write)"]), ok());
    let u = c.cmd(&["ACL", "GETUSER", "u"]);
    assert_eq!(field(&u, "flags"), Reply::Array(vec![Reply::bulk("on")]));
    assert_eq!(field(&u, "passwords"), Reply::Array(vec![Reply::bulk(hash)]));
    assert_eq!(field(&u, "commands"), Reply::bulk("-@all +@hash +get"));
    assert_eq!(field(&u, "keys"), Reply::bulk("~a*"));
    assert_eq!(field(&u, "channels"), Reply::bulk("&ch"));
    let Reply::Array(selectors) = field(&u, "selectors") else { panic!() };
    assert_eq!(selectors.len(), 2);
    assert_eq!(field(&selectors[0], "commands"), Reply::bulk("-@all +set"));
    assert_eq!(field(&selectors[1], "keys"), Reply::bulk("%W~w*"));
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "u", "(~s*"]),
        err("ERR Unmatched parenthesis in acl selector starting at '(~s*'.")
    );
    // A selector allows what the root does not.
    assert_eq!(c.cmd(&["ACL", "SETUSER", "u", "resetpass", "nopass"]), ok());
    let mut u = as_user(&srv, "u", "x");
    assert_eq!(u.cmd(&["SET", "s1", "v"]), ok(), "the first selector");
    // The second's keys are written, not read: SET without GET and DEL only write theirs
    // (their key-spec flags, as Redis checks them); SET ... GET reads it too.
    assert_eq!(u.cmd(&["SET", "w1", "v"]), ok());
    assert_eq!(u.cmd(&["SET", "w1", "v", "GET"]), noperm_key(), "the second's key cannot be read");
    assert_eq!(u.cmd(&["DEL", "w1"]), Reply::Int(1));
    assert_eq!(u.cmd(&["SET", "a1", "v"]), noperm_key(), "root: not its command");
    assert_eq!(u.cmd(&["GET", "z"]), noperm_key(), "the command's refusal ranks below a key's");
    assert_eq!(u.cmd(&["LLEN", "z"]), noperm_command("llen"));
    // Categories and `-@all`/`+@all` read back in Redis's form; a rule naming one of Redis's
    // commands this server lacks is taken.
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "v", "+@all", "-@dangerous", "-debug", "+config|get"]),
        ok()
    );
    let v = c.cmd(&["ACL", "GETUSER", "v"]);
    assert_eq!(field(&v, "commands"), Reply::bulk("+@all -@dangerous +config|get"));
    assert_eq!(c.cmd(&["ACL", "SETUSER", "v", "reset"]), ok());
    let v = c.cmd(&["ACL", "GETUSER", "v"]);
    assert_eq!(
        field(&v, "flags"),
        Reply::Array(vec![Reply::bulk("off"), Reply::bulk("sanitize-payload")])
    );
    assert_eq!(field(&v, "commands"), Reply::bulk("-@all"));
    assert_eq!(field(&v, "keys"), Reply::bulk(""));
    assert_eq!(c.cmd(&["ACL", "GETUSER", "nobody"]), Reply::Null);
    assert_eq!(
        c.cmd(&["ACL", "USERS"]),
        Reply::Array(vec![Reply::bulk("default"), Reply::bulk("u"), Reply::bulk("v")])
    );
}

#[test]
fn channels_log_dryrun_transactions_scripts_and_deletion() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(
        c.cmd(&[
            "ACL",
            "SETUSER",
            "p",
            "on",
            "nopass",
            "+@pubsub",
            "+@scripting",
            "+set",
            "+get",
            "+multi",
            "+exec",
            "~k*",
            "&news.*"
        ]),
        ok()
    );
    let mut p = as_user(&srv, "p", "");
    assert_eq!(p.cmd(&["PUBLISH", "news.a", "m"]), Reply::Int(0));
    assert_eq!(p.cmd(&["PUBLISH", "other", "m"]), noperm_channel());
    // A PSUBSCRIBE pattern must be one of the user's own, written the same.
    assert_eq!(p.cmd(&["PSUBSCRIBE", "news.*.x"]), noperm_channel());
    assert_eq!(p.cmd(&["SPUBLISH", "other", "m"]), noperm_channel());
    // ACL LOG: newest first, alike refusals counted together.
    assert_eq!(p.cmd(&["GET", "zz"]), noperm_key());
    assert_eq!(p.cmd(&["GET", "zz"]), noperm_key());
    assert_eq!(p.cmd(&["LPUSH", "k", "v"]), noperm_command("lpush"));
    assert_eq!(srv.raw().cmd(&["AUTH", "p", "x"]), ok(), "nopass: any password");
    assert_eq!(
        srv.raw().cmd(&["AUTH", "nobody", "x"]),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    let Reply::Array(log) = c.cmd(&["ACL", "LOG"]) else { panic!() };
    let summary: Vec<(Reply, Reply, Reply, Reply)> = log
        .iter()
        .map(|e| (field(e, "reason"), field(e, "object"), field(e, "count"), field(e, "username")))
        .collect();
    assert_eq!(
        summary[0],
        (Reply::bulk("auth"), Reply::bulk("AUTH"), Reply::Int(1), Reply::bulk("nobody"))
    );
    assert_eq!(
        summary[1],
        (Reply::bulk("command"), Reply::bulk("lpush"), Reply::Int(1), Reply::bulk("p"))
    );
    assert_eq!(
        summary[2],
        (Reply::bulk("key"), Reply::bulk("zz"), Reply::Int(2), Reply::bulk("p"))
    );
    assert_eq!(field(&log[2], "context"), Reply::bulk("toplevel"));
    assert!(
        matches!(field(&log[2], "client-info"), Reply::Bulk(b) if String::from_utf8_lossy(&b).contains("user=p"))
    );
    let Reply::Array(one) = c.cmd(&["ACL", "LOG", "1"]) else { panic!() };
    assert_eq!(one.len(), 1);
    assert_eq!(field(&one[0], "reason"), Reply::bulk("auth"), "the newest");
    assert_eq!(c.cmd(&["ACL", "LOG", "RESET"]), ok());
    assert_eq!(c.cmd(&["ACL", "LOG"]), Reply::Array(vec![]));
    // DRYRUN.
    assert_eq!(c.cmd(&["ACL", "DRYRUN", "p", "SET", "k1", "v"]), ok());
    assert_eq!(
        c.cmd(&["ACL", "DRYRUN", "p", "SET", "x", "v"]),
        Reply::bulk("This user has no permissions to access the 'x' key")
    );
    assert_eq!(
        c.cmd(&["ACL", "DRYRUN", "p", "DEL", "k1"]),
        Reply::bulk("This user has no permissions to run the 'del' command")
    );
    assert_eq!(c.cmd(&["ACL", "DRYRUN", "nobody", "GET", "x"]), err("ERR User 'nobody' not found"));
    assert_eq!(c.cmd(&["ACL", "DRYRUN", "p", "NOSUCH"]), err("ERR Command 'NOSUCH' not found"));
    // MULTI: refused when queued (the transaction is doomed), and at EXEC if the rules
    // changed since.
    assert_eq!(p.cmd(&["MULTI"]), ok());
    assert_eq!(p.cmd(&["SET", "x", "1"]), noperm_key());
    assert_eq!(
        p.cmd(&["EXEC"]),
        err("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(p.cmd(&["MULTI"]), ok());
    assert_eq!(p.cmd(&["SET", "k2", "1"]), Reply::Simple("QUEUED".into()));
    assert_eq!(c.cmd(&["ACL", "SETUSER", "p", "-set"]), ok());
    assert_eq!(
        p.cmd(&["EXEC"]),
        Reply::Array(vec![err("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand")])
    );
    let Reply::Array(log) = c.cmd(&["ACL", "LOG"]) else { panic!() };
    assert_eq!(field(&log[0], "context"), Reply::bulk("multi"));
    // Scripts: each call checked for the script's caller; redis.acl_check_cmd.
    assert_eq!(c.cmd(&["ACL", "SETUSER", "p", "+set"]), ok());
    assert_eq!(p.cmd(&["EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k3"]), ok());
    assert!(matches!(
        p.cmd(&["EVAL", "return redis.call('set', 'other', 'v')", "0"]),
        Reply::Error(e) if e.starts_with("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: ")
    ));
    assert_eq!(p.cmd(&["EVAL", "return redis.acl_check_cmd('set','k9','1')", "0"]), Reply::Int(1));
    assert_eq!(
        p.cmd(&["EVAL", "return redis.acl_check_cmd('hset','k9','f','1')", "0"]),
        Reply::Null
    );
    assert!(matches!(
        p.cmd(&["EVAL", "return redis.acl_check_cmd('nosuch','a')", "0"]),
        Reply::Error(e) if e.starts_with("ERR Invalid command passed to redis.acl_check_cmd()")
    ));
    let Reply::Array(log) = c.cmd(&["ACL", "LOG"]) else { panic!() };
    assert_eq!(
        (field(&log[0], "context"), field(&log[0], "object")),
        (Reply::bulk("lua"), Reply::bulk("other"))
    );
    // A subscriber whose channel is revoked is disconnected; DELUSER closes the user's
    // connections (not the default user's), and the default user cannot be deleted.
    let mut s = as_user(&srv, "p", "");
    assert!(matches!(s.cmd(&["SUBSCRIBE", "news.x"]), Reply::Array(_)));
    assert_eq!(c.cmd(&["ACL", "SETUSER", "p", "resetchannels", "&sports"]), ok());
    assert!(s.try_read().is_none(), "closed");
    assert_eq!(
        c.cmd(&["ACL", "DELUSER", "default"]),
        err("ERR The 'default' user cannot be removed")
    );
    assert_eq!(c.cmd(&["ACL", "DELUSER", "p", "nobody"]), Reply::Int(1));
    assert!(p.try_read().is_none(), "closed");
    assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn requirepass_is_the_default_users_password_and_an_off_default_user_needs_auth() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["CONFIG", "SET", "requirepass", "pw"]), ok());
    let mut d = srv.raw();
    assert_eq!(d.cmd(&["GET", "a"]), err("NOAUTH Authentication required."));
    assert_eq!(d.cmd(&["AUTH", "pw"]), ok());
    let hash = "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4";
    let Reply::Array(list) = d.cmd(&["ACL", "LIST"]) else { panic!() };
    assert_eq!(list, vec![Reply::bulk(&format!("user default on #{hash} ~* &* +@all"))]);
    assert_eq!(d.cmd(&["CONFIG", "SET", "requirepass", ""]), ok());
    assert_eq!(srv.raw().cmd(&["GET", "a"]), Reply::Null);
    assert_eq!(c.cmd(&["ACL", "SETUSER", "default", "off"]), ok());
    assert_eq!(srv.raw().cmd(&["GET", "a"]), err("NOAUTH Authentication required."));
    assert_eq!(c.cmd(&["GET", "a"]), Reply::Null, "an open connection goes on");
}

#[test]
fn users_come_from_the_config_file_or_an_acl_file_saved_and_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("redis.conf");
    std::fs::write(
        &cfg,
        "user alice on >a1 ~* +@all -flushall\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let srv = Server::start(&[cfg.to_str().unwrap(), "--user", "carl on >c ~c* +get"]);
    let mut a = as_user(&srv, "alice", "a1");
    assert_eq!(a.cmd(&["FLUSHALL"]), noperm_command("flushall"));
    let mut carl = as_user(&srv, "carl", "c");
    assert_eq!((carl.cmd(&["GET", "c1"]), carl.cmd(&["GET", "d1"])), (Reply::Null, noperm_key()));
    assert_eq!(a.cmd(&["ACL", "SAVE"]), err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."));
    drop(srv);

    // A bad user line stops the start, naming the line and the rule.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--dir"])
        .arg(dir.path().join("bad"))
        .args(["--user", "dave on +nosuch"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config:1: Error in applying operation '+nosuch'"), "{stderr}");

    let acl = dir.path().join("users.acl");
    std::fs::write(&acl, "user bob on >b1 ~b* +get\n").unwrap();
    let cfg = dir.path().join("acl.conf");
    std::fs::write(&cfg, format!("aclfile {}\n", acl.display())).unwrap();
    let srv = Server::start(&[cfg.to_str().unwrap()]);
    let mut c = srv.raw();
    assert_eq!(
        c.cmd(&["ACL", "USERS"]),
        Reply::Array(vec![Reply::bulk("bob"), Reply::bulk("default")])
    );
    let mut b = as_user(&srv, "bob", "b1");
    assert_eq!(b.cmd(&["GET", "b1"]), Reply::Null);
    assert_eq!(c.cmd(&["ACL", "SETUSER", "carol", "on", ">c1", "+ping"]), ok());
    assert_eq!(c.cmd(&["ACL", "SAVE"]), ok());
    let saved = std::fs::read_to_string(&acl).unwrap();
    assert!(saved.contains("user carol on #"), "{saved}");
    // LOAD replaces the users all at once: a bad file changes nothing.
    std::fs::write(&acl, "user bob on >b2 +get ~*\nuser dave +nosuch\n").unwrap();
    assert!(
        matches!(c.cmd(&["ACL", "LOAD"]), Reply::Error(e) if e.contains("Error in applying operation '+nosuch'") && e.ends_with("no change to the previously active ACL rules was performed"))
    );
    assert_eq!(b.cmd(&["GET", "b1"]), Reply::Null, "bob still here");
    std::fs::write(&acl, "user bob on >b2 +get ~*\n").unwrap();
    assert_eq!(c.cmd(&["ACL", "LOAD"]), ok());
    assert!(b.try_read().is_none(), "the old bob's connection is closed");
    assert_eq!(
        c.cmd(&["ACL", "USERS"]),
        Reply::Array(vec![Reply::bulk("bob"), Reply::bulk("default")])
    );
    assert_eq!(
        srv.raw().cmd(&["AUTH", "bob", "b1"]),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(as_user(&srv, "bob", "b2").cmd(&["GET", "zz"]), Reply::Null);
}

/// SETUSERs of one user from many connections at once keep every one's rules (each is a
/// read, change and store of the user, made under the users' lock).
#[test]
fn concurrent_setusers_of_one_user_lose_no_rule() {
    let dir = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(dir.path());
    let commands: [&[&str]; 8] = [
        &["get", "k"],
        &["set", "k", "v"],
        &["incr", "k"],
        &["decr", "k"],
        &["append", "k", "v"],
        &["strlen", "k"],
        &["lpush", "k", "v"],
        &["rpush", "k", "v"],
    ];
    for round in 0..20 {
        let user = format!("u{round}");
        std::thread::scope(|s| {
            for c in commands {
                let (sh, user) = (&sh, &user);
                let rule = format!("+{}", c[0]);
                s.spawn(move || crate::common::run_ok(sh, &["ACL", "SETUSER", user, &rule]));
            }
        });
        let reply = crate::common::run_ok(&sh, &["ACL", "DRYRUN", &user, "PING"]);
        assert!(reply.starts_with(b"$"), "ping was never allowed");
        // DRYRUN's answers: a key refusal (no key pattern) once the command is allowed.
        for c in commands {
            let line: Vec<&str> =
                ["ACL", "DRYRUN", user.as_str()].into_iter().chain(c.iter().copied()).collect();
            let reply = crate::common::run_ok(&sh, &line);
            assert!(
                !String::from_utf8_lossy(&reply).contains("no permissions to run"),
                "round {round}: +{} lost: {}",
                c[0],
                String::from_utf8_lossy(&reply)
            );
        }
    }
}

/// A cluster node with a password, or whose controller is an ACL user with CLUSTER and
/// INFO only, is driven by `strata-cluster --pass` (`--user`); without them its commands
/// are refused with the node's NOAUTH.
#[test]
fn the_cluster_controller_authenticates_to_its_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let ports = crate::cluster_mode::free_ports(2);
    let nodes = format!("1=127.0.0.1:{}:{}", ports[0], ports[1]);
    /// Stops the node however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _node = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
            .args(["--port", &ports[0].to_string(), "--dir"])
            .arg(dir.path())
            .args(["--cluster-enabled", "yes", "--cluster-node-id", "1", "--cluster-nodes", &nodes])
            .args(["--cluster-partitions", "2", "--cluster-replicas", "1"])
            .args(["--cluster-bootstrap", "yes", "--requirepass", "pw"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = format!("127.0.0.1:{}", ports[0]);
    let controller = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
            .args(["--node", &addr, "--timeout", "20"])
            .args(extra)
            .arg("status")
            .output()
            .unwrap()
    };
    // Up once it answers (NOAUTH is an answer).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(std::time::Instant::now() < deadline, "the node did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let refused = controller(&[]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("NOAUTH"), "{refused:?}");
    let wrong = controller(&["--pass", "nope"]);
    assert!(
        String::from_utf8_lossy(&wrong.stderr)
            .contains("WRONGPASS invalid username-password pair or user is disabled. (AUTH at"),
        "{wrong:?}"
    );
    let ok = controller(&["--pass", "pw"]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout).contains("partition"), "{ok:?}");
    let mut c = Raw::connect(ports[0]);
    assert_eq!(c.cmd(&["AUTH", "pw"]), ok_reply());
    assert_eq!(c.cmd(&["ACL", "SETUSER", "ops", "on", ">o", "+cluster", "+info"]), ok_reply());
    let ops = controller(&["--user", "ops", "--pass", "o"]);
    assert!(ops.status.success(), "{ops:?}");
}

fn ok_reply() -> Reply {
    ok()
}

/// `CONFIG SET requirepass` changes the default user as SETUSER does, under the same lock:
/// selectors SETUSER adds meanwhile are all kept.
#[test]
fn requirepass_set_while_the_default_user_changes_loses_no_rule() {
    let dir = tempfile::tempdir().unwrap();
    let sh = crate::common::in_process(dir.path());
    let writers_left = std::sync::atomic::AtomicUsize::new(4);
    std::thread::scope(|s| {
        let (sh, writers_left) = (&sh, &writers_left);
        s.spawn(move || {
            let mut i = 0;
            while writers_left.load(std::sync::atomic::Ordering::Acquire) > 0 {
                let pass = if i % 2 == 0 { "pw" } else { "" };
                crate::common::run_ok(sh, &["CONFIG", "SET", "requirepass", pass]);
                i += 1;
            }
        });
        for t in 0..4 {
            s.spawn(move || {
                for i in 0..50 {
                    let selector = format!("(~k{t}x{i} +get)");
                    crate::common::run_ok(sh, &["ACL", "SETUSER", "default", &selector]);
                }
                writers_left.fetch_sub(1, std::sync::atomic::Ordering::Release);
            });
        }
    });
    let list = String::from_utf8_lossy(&crate::common::run_ok(&sh, &["ACL", "LIST"])).into_owned();
    assert_eq!(list.matches("(~k").count(), 200, "{list}");
}

#[test]
fn read_and_write_patterns_follow_each_keys_flags() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["ACL", "SETUSER", "rw", "on", "nopass", "%R~r*", "%W~w*", "+@all"]), ok());
    let mut u = as_user(&srv, "rw", "x");
    // Neither read nor written (EXISTS, TYPE): any pattern that matches will do.
    assert_eq!(u.cmd(&["EXISTS", "r1", "w1"]), Reply::Int(0));
    assert_eq!(u.cmd(&["TYPE", "x1"]), noperm_key(), "no pattern matches");
    assert_eq!(u.cmd(&["GET", "r1"]), Reply::Null);
    assert_eq!(u.cmd(&["GET", "w1"]), noperm_key());
    assert_eq!(u.cmd(&["SET", "w1", "v"]), ok(), "written, not read");
    assert_eq!(u.cmd(&["SET", "r1", "v"]), noperm_key());
    // COPY reads its source and writes its destination; LMOVE also deletes from its source.
    assert_eq!(c.cmd(&["SET", "r2", "v"]), ok());
    assert_eq!(u.cmd(&["COPY", "r2", "w2"]), Reply::Int(1));
    assert_eq!(u.cmd(&["COPY", "w2", "w3"]), noperm_key());
    assert_eq!(u.cmd(&["LMOVE", "r3", "w4", "LEFT", "RIGHT"]), noperm_key());
    assert_eq!(
        u.cmd(&["SORT", "r2", "STORE", "w5"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(u.cmd(&["SORT", "w2", "STORE", "w5"]), noperm_key());
    assert_eq!(u.cmd(&["DEL", "w1", "w2"]), Reply::Int(2), "deleting is writing");
}

#[test]
fn sort_by_and_get_patterns_need_every_key_readable() {
    let srv = Server::start(&[]);
    let mut c = srv.raw();
    assert_eq!(c.cmd(&["RPUSH", "mylist", "1"]), Reply::Int(1));
    assert_eq!(c.cmd(&["SET", "v1", "1"]), ok());
    let by = err("ERR BY option of SORT denied due to insufficient ACL permissions.");
    let get = err("ERR GET option of SORT denied due to insufficient ACL permissions.");
    let mut u = srv.raw();
    for rules in [
        &["(+sort +eval ~mylist)"][..],
        &["(+sort +eval ~mylist ~v*)"],
        &["(+sort +eval ~mylist %W~*)"],
    ] {
        let mut line = vec!["ACL", "SETUSER", "s", "on", "nopass", "reset", "on", "nopass"];
        line.extend_from_slice(rules);
        assert_eq!(c.cmd(&line), ok(), "{rules:?}");
        assert_eq!(u.cmd(&["AUTH", "s", "x"]), ok());
        assert_eq!(u.cmd(&["SORT", "mylist", "BY", "v*"]), by, "{rules:?}");
        assert_eq!(u.cmd(&["SORT", "mylist", "GET", "v*"]), get, "{rules:?}");
        assert_eq!(
            u.cmd(&["SORT", "mylist", "GET", "#"]),
            get,
            "GET is refused whatever its pattern"
        );
        // A script's calls are its caller's.
        let script = "return redis.pcall('sort', KEYS[1], 'by', 'v*')";
        assert_eq!(u.cmd(&["EVAL", script, "1", "mylist"]), by, "{rules:?}");
    }
    assert_eq!(u.cmd(&["SORT", "mylist", "BY", "nosort"]), Reply::Array(vec![Reply::bulk("1")]));
    let line = ["ACL", "SETUSER", "s", "reset", "on", "nopass", "(+sort ~mylist %R~*)"];
    assert_eq!(c.cmd(&line), ok());
    assert_eq!(u.cmd(&["AUTH", "s", "x"]), ok());
    assert_eq!(
        u.cmd(&["SORT", "mylist", "BY", "v*", "GET", "v*"]),
        Reply::Array(vec![Reply::bulk("1")])
    );
}
