//! The fleet's backend: every plugin's store in the Redis server the replicas already share
//! (`[kv] backend = "redis"`), with the semantics of the SQLite backend.
//!
//! A plugin's keys share one hash tag (`toolhost:kv:{PLUGIN}:…`), so each operation is one
//! script on one slot, atomic even on a cluster: a bucket is a hash (`…:b:BUCKET`, field =
//! key), the store's usage a hash of its own (`…:usage`: `keys`, `bytes`), its bucket names a
//! set (`…:buckets`). Writes, batches and compare-and-swap are one Lua script each, checking
//! the bounds before anything is written; `increment` is `HINCRBY` (64-bit, refusing a value
//! that is not an integer and an overflow). Redis unreachable fails the operation with an
//! error naming the server (never another store instead). Durability is Redis's own (its
//! `appendonly`/`appendfsync`).

use super::error::KvError;
use super::settings::{KvLimits, Limit};
use super::sqlite::{BucketInfo, KEYS_PER_PAGE, Pair, Swapped};
use std::time::Duration;

/// How long one operation may wait for Redis.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Set pairs (and, for a swap, first compare): KEYS = usage, buckets set, bucket hashes;
/// ARGV = max keys, max bytes, mode (`set` | `swap`), expected present (`0`/`1`), expected
/// value, then (hash index, bucket, field, value) per pair. Replies `{"ok"}`, `{"holds", 0|1,
/// value}` (swap refused), or `{"keys"|"bytes", would}` (over a bound: nothing written).
const PUT: &str = r#"
if ARGV[3] == 'swap' then
  local now = redis.call('HGET', KEYS[tonumber(ARGV[6]) + 2], ARGV[8])
  if (ARGV[4] == '1') ~= (now ~= false) or (now and now ~= ARGV[5]) then
    if now then return {'holds', 1, now} else return {'holds', 0, ''} end
  end
end
local dk, db, seen = 0, 0, {}
for i = 6, #ARGV, 4 do
  local h, f, v = KEYS[tonumber(ARGV[i]) + 2], ARGV[i + 2], ARGV[i + 3]
  local id = h .. '\0' .. f
  local old = seen[id]
  if old == nil then
    if redis.call('HEXISTS', h, f) == 1 then old = redis.call('HSTRLEN', h, f) else old = false end
  end
  if old == false then dk = dk + 1; db = db + #f + #v else db = db + #v - old end
  seen[id] = #v
end
local keys = tonumber(redis.call('HGET', KEYS[1], 'keys') or '0') + dk
local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0') + db
if dk > 0 and keys > tonumber(ARGV[1]) then return {'keys', keys} end
if db > 0 and bytes > tonumber(ARGV[2]) then return {'bytes', bytes} end
for i = 6, #ARGV, 4 do
  redis.call('HSET', KEYS[tonumber(ARGV[i]) + 2], ARGV[i + 2], ARGV[i + 3])
  redis.call('SADD', KEYS[2], ARGV[i + 1])
end
redis.call('HSET', KEYS[1], 'keys', keys, 'bytes', bytes)
return {'ok'}
"#;

/// Delete fields: KEYS = usage, the bucket's hash; ARGV = the fields.
const DELETE: &str = r#"
local dk, db = 0, 0
for i = 1, #ARGV do
  local f = ARGV[i]
  if redis.call('HEXISTS', KEYS[2], f) == 1 then
    dk = dk - 1
    db = db - #f - redis.call('HSTRLEN', KEYS[2], f)
    redis.call('HDEL', KEYS[2], f)
  end
end
if dk ~= 0 then
  redis.call('HINCRBY', KEYS[1], 'keys', dk)
  redis.call('HINCRBY', KEYS[1], 'bytes', db)
end
return 0
"#;

/// Increment: KEYS = usage, buckets set, the bucket's hash; ARGV = bucket, field, delta, max
/// keys, max bytes. Replies `{"ok", value-as-text}`, `{"nan"}`, `{"overflow"}` or `{"keys"|"bytes",
/// would}`.
const INCREMENT: &str = r#"
local h, f = KEYS[3], ARGV[2]
local old = redis.call('HGET', h, f)
local r = redis.pcall('HINCRBY', h, f, ARGV[3])
if type(r) == 'table' and r.err then
  if string.find(r.err, 'overflow') then return {'overflow'} end
  return {'nan'}
end
local now = redis.call('HGET', h, f)
local dk, db = 0, 0
if old then db = #now - #old else dk = 1; db = #f + #now end
local keys = tonumber(redis.call('HGET', KEYS[1], 'keys') or '0') + dk
local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0') + db
if (dk > 0 and keys > tonumber(ARGV[4])) or (db > 0 and bytes > tonumber(ARGV[5])) then
  if old then redis.call('HSET', h, f, old) else redis.call('HDEL', h, f) end
  if dk > 0 and keys > tonumber(ARGV[4]) then return {'keys', keys} end
  return {'bytes', bytes}
end
redis.call('HSET', KEYS[1], 'keys', keys, 'bytes', bytes)
redis.call('SADD', KEYS[2], ARGV[1])
return {'ok', now}
"#;

/// One plugin's store on a Redis server. A `get` is answered from the link's client-side cache
/// while Redis has not said the value changed (see [`crate::redis_link`]); every write, atomic
/// and batch goes to the server.
#[derive(Debug)]
pub struct RedisStore {
    plugin: String,
    link: crate::redis_link::RedisLink,
    limits: KvLimits,
}

pub use crate::redis_link::shown;

/// The plugins with a store on the server at `url` (by their `…:usage` keys), in order.
pub async fn plugins(url: &str) -> Result<Vec<String>, KvError> {
    let store = RedisStore::open("*", url, KvLimits::default())?;
    let mut out = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, keys): (String, Vec<String>) = store
            .query(|| {
                redis::cmd("SCAN")
                    .arg(&cursor)
                    .arg("MATCH")
                    .arg("toolhost:kv:{*}:usage")
                    .arg("COUNT")
                    .arg(1000)
                    .clone()
            })
            .await?;
        out.extend(
            keys.iter()
                .filter_map(|k| Some(k.strip_prefix("toolhost:kv:{")?.strip_suffix("}:usage")?.to_string())),
        );
        if next == "0" {
            out.sort();
            out.dedup();
            return Ok(out);
        }
        cursor = next;
    }
}

impl RedisStore {
    /// `plugin`'s store at `url`; the server is first asked at the first operation.
    pub fn open(plugin: &str, url: &str, limits: KvLimits) -> Result<RedisStore, KvError> {
        let link =
            crate::redis_link::RedisLink::open_cached(url, TIMEOUT, super::KEPT_BYTES).map_err(|e| {
                KvError::Unavailable { plugin: plugin.into(), at: shown(url), why: e.to_string() }
            })?;
        Ok(RedisStore { plugin: plugin.into(), link, limits })
    }

    pub fn shown(&self) -> &str {
        self.link.shown()
    }

    fn key(&self, what: &str) -> String {
        format!("toolhost:kv:{{{}}}:{what}", self.plugin)
    }

    fn hash(&self, bucket: &str) -> String {
        self.key(&format!("b:{bucket}"))
    }

    fn failed(&self, why: String) -> KvError {
        KvError::Unavailable { plugin: self.plugin.clone(), at: self.link.shown().to_string(), why }
    }

    /// Run `cmd` on the link (see [`crate::redis_link::RedisLink::query`]).
    async fn query<T: redis::FromRedisValue>(&self, cmd: impl FnOnce() -> redis::Cmd) -> Result<T, KvError> {
        self.link.query(&cmd()).await.map_err(|why| self.failed(why))
    }

    async fn script<T: redis::FromRedisValue>(
        &self,
        body: &str,
        keys: &[String],
        args: Vec<Vec<u8>>,
    ) -> Result<T, KvError> {
        self.query(|| {
            let mut c = redis::cmd("EVAL");
            c.arg(body).arg(keys.len()).arg(keys);
            for a in args {
                c.arg(a);
            }
            c
        })
        .await
    }

    pub async fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.link.hget_cached(&self.hash(bucket), key).await.map_err(|why| self.failed(why))
    }

    pub async fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        self.query(|| redis::cmd("HEXISTS").arg(self.hash(bucket)).arg(key).clone()).await
    }

    /// A page of keys (sorted within the page) and the cursor of the next, as `HSCAN` gives
    /// them.
    pub async fn list_keys(
        &self,
        bucket: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>), KvError> {
        let cursor = cursor.unwrap_or("0");
        if cursor.parse::<u64>().is_err() {
            return Err(self.failed(format!("{cursor:?} is not a cursor this store gave")));
        }
        let (next, flat): (String, Vec<Vec<u8>>) = self
            .query(|| {
                redis::cmd("HSCAN").arg(self.hash(bucket)).arg(cursor).arg("COUNT").arg(KEYS_PER_PAGE).clone()
            })
            .await?;
        let mut keys: Vec<String> =
            flat.chunks(2).filter_map(|kv| String::from_utf8(kv[0].clone()).ok()).collect();
        keys.sort();
        Ok((keys, (next != "0").then_some(next)))
    }

    pub async fn get_many(&self, bucket: &str, keys: &[String]) -> Result<Vec<Option<Pair>>, KvError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let values: Vec<Option<Vec<u8>>> =
            self.query(|| redis::cmd("HMGET").arg(self.hash(bucket)).arg(keys).clone()).await?;
        Ok(keys.iter().zip(values).map(|(k, v)| v.map(|v| (k.clone(), v))).collect())
    }

    pub async fn set(&self, bucket: &str, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.put("set", None, &[(bucket.to_string(), (key.to_string(), value.to_vec()))]).await.map(|_| ())
    }

    pub async fn set_many(&self, bucket: &str, pairs: &[Pair]) -> Result<(), KvError> {
        let entries: Vec<(String, Pair)> = pairs.iter().map(|p| (bucket.to_string(), p.clone())).collect();
        self.import(&entries).await
    }

    /// Set every entry, all or none.
    pub async fn import(&self, entries: &[(String, Pair)]) -> Result<(), KvError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.put("set", None, entries).await.map(|_| ())
    }

    pub async fn swap(
        &self,
        bucket: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<Swapped, KvError> {
        self.put("swap", Some(expected), &[(bucket.to_string(), (key.to_string(), value.to_vec()))]).await
    }

    async fn put(
        &self,
        mode: &str,
        expected: Option<Option<&[u8]>>,
        entries: &[(String, Pair)],
    ) -> Result<Swapped, KvError> {
        let mut hashes: Vec<String> = Vec::new();
        let mut args: Vec<Vec<u8>> = vec![
            self.limits.max_keys.to_string().into_bytes(),
            self.limits.max_total_bytes.to_string().into_bytes(),
            mode.as_bytes().to_vec(),
            if matches!(expected, Some(Some(_))) { b"1".to_vec() } else { b"0".to_vec() },
            expected.flatten().unwrap_or_default().to_vec(),
        ];
        for (bucket, (k, v)) in entries {
            let h = self.hash(bucket);
            let i = hashes.iter().position(|x| *x == h).unwrap_or_else(|| {
                hashes.push(h);
                hashes.len() - 1
            });
            args.extend([
                (i + 1).to_string().into_bytes(),
                bucket.clone().into_bytes(),
                k.clone().into_bytes(),
                v.clone(),
            ]);
        }
        let mut keys = vec![self.key("usage"), self.key("buckets")];
        keys.extend(hashes);
        let reply: Vec<redis::Value> = self.script(PUT, &keys, args).await?;
        self.reply(reply)
    }

    /// What a `PUT` or `INCREMENT` script answered.
    fn reply(&self, reply: Vec<redis::Value>) -> Result<Swapped, KvError> {
        let word = |i: usize| {
            reply.get(i).and_then(|v| redis::from_redis_value::<Vec<u8>>(v.clone()).ok()).unwrap_or_default()
        };
        let number =
            |i: usize| reply.get(i).and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok()).unwrap_or(0);
        match &word(0)[..] {
            b"ok" => Ok(Swapped::Done),
            b"holds" => Ok(Swapped::Holds((number(1) == 1).then(|| word(2)))),
            b"keys" => Err(KvError::Limit {
                limit: Limit::Keys,
                what: format!(
                    "plugin `{}`'s store would hold {} keys, over its limit of {}",
                    self.plugin,
                    number(1),
                    self.limits.max_keys
                ),
            }),
            b"bytes" => Err(KvError::Limit {
                limit: Limit::TotalBytes,
                what: format!(
                    "plugin `{}`'s store would hold {} bytes, over its limit of {}",
                    self.plugin,
                    number(1),
                    self.limits.max_total_bytes
                ),
            }),
            other => Err(self.failed(format!("unexpected reply {:?}", String::from_utf8_lossy(other)))),
        }
    }

    pub async fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        self.delete_many(bucket, &[key.to_string()]).await
    }

    pub async fn delete_many(&self, bucket: &str, keys: &[String]) -> Result<(), KvError> {
        if keys.is_empty() {
            return Ok(());
        }
        let args = keys.iter().map(|k| k.clone().into_bytes()).collect();
        let _: i64 = self.script(DELETE, &[self.key("usage"), self.hash(bucket)], args).await?;
        Ok(())
    }

    pub async fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        let keys = [self.key("usage"), self.key("buckets"), self.hash(bucket)];
        let args = vec![
            bucket.as_bytes().to_vec(),
            key.as_bytes().to_vec(),
            delta.to_string().into_bytes(),
            self.limits.max_keys.to_string().into_bytes(),
            self.limits.max_total_bytes.to_string().into_bytes(),
        ];
        let reply: Vec<redis::Value> = self.script(INCREMENT, &keys, args).await?;
        let first = reply
            .first()
            .and_then(|v| redis::from_redis_value::<Vec<u8>>(v.clone()).ok())
            .unwrap_or_default();
        match &first[..] {
            b"nan" => Err(KvError::NotANumber { key: key.into() }),
            b"overflow" => Err(KvError::Overflow { key: key.into(), delta }),
            b"ok" => {
                let text = reply
                    .get(1)
                    .and_then(|v| redis::from_redis_value::<String>(v.clone()).ok())
                    .unwrap_or_default();
                text.parse().map_err(|_| self.failed(format!("{text:?} came back from HINCRBY")))
            }
            _ => self.reply(reply).map(|_| 0),
        }
    }

    /// The buckets that hold keys, with their sizes.
    pub async fn buckets(&self) -> Result<Vec<BucketInfo>, KvError> {
        let mut names: Vec<String> =
            self.query(|| redis::cmd("SMEMBERS").arg(self.key("buckets")).clone()).await?;
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let all: Vec<(String, Vec<u8>)> =
                self.query(|| redis::cmd("HGETALL").arg(self.hash(&name)).clone()).await?;
            if !all.is_empty() {
                let bytes = all.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
                out.push(BucketInfo { name, keys: all.len() as u64, bytes });
            }
        }
        Ok(out)
    }

    /// Every pair of `bucket` (or of every bucket), in order, with its bucket.
    pub async fn entries(&self, bucket: Option<&str>) -> Result<Vec<(String, Pair)>, KvError> {
        let mut out = Vec::new();
        for b in self.buckets().await? {
            if bucket.is_some_and(|x| x != b.name) {
                continue;
            }
            let mut all: Vec<(String, Vec<u8>)> =
                self.query(|| redis::cmd("HGETALL").arg(self.hash(&b.name)).clone()).await?;
            all.sort();
            out.extend(all.into_iter().map(|p| (b.name.clone(), p)));
        }
        Ok(out)
    }

    pub async fn usage(&self) -> Result<(u64, u64), KvError> {
        let (keys, bytes): (Option<u64>, Option<u64>) = self
            .query(|| redis::cmd("HMGET").arg(self.key("usage")).arg("keys").arg("bytes").clone())
            .await?;
        Ok((keys.unwrap_or(0), bytes.unwrap_or(0)))
    }

    /// Delete the whole store; whether there was one.
    pub async fn purge(&self) -> Result<bool, KvError> {
        let names: Vec<String> =
            self.query(|| redis::cmd("SMEMBERS").arg(self.key("buckets")).clone()).await?;
        let mut keys: Vec<String> = names.iter().map(|b| self.hash(b)).collect();
        keys.extend([self.key("usage"), self.key("buckets")]);
        let deleted: i64 = self.query(|| redis::cmd("DEL").arg(&keys).clone()).await?;
        Ok(deleted > 0)
    }
}
