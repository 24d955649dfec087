-- ---------------------------------------------------------------------------------
-- The interpreter: walks the tables above. Written for Wireshark 4.0 (Lua 5.2): every
-- function keeps well under Lua's 200 locals, every read is checked against the bytes
-- left, and a problem becomes an expert item at the byte where it was found.
-- ---------------------------------------------------------------------------------

local kw = Proto("kwire", "Kafka (kwire)")

local MAX_FRAME = 256 * 1024 * 1024 -- a size prefix above this is not a Kafka frame
local MAX_DEPTH = 32                -- struct nesting followed at most
local MAX_INFLATE = 64 * 1024 * 1024

local PF = {}
local pf_list = {}
local function new_pf(abbr, name, kind)
  local f
  if kind == "i8" then f = ProtoField.int8(abbr, name, base.DEC)
  elseif kind == "i16" then f = ProtoField.int16(abbr, name, base.DEC)
  elseif kind == "u16" then f = ProtoField.uint16(abbr, name, base.DEC)
  elseif kind == "i32" then f = ProtoField.int32(abbr, name, base.DEC)
  elseif kind == "u32" then f = ProtoField.uint32(abbr, name, base.DEC)
  elseif kind == "i64" then f = ProtoField.int64(abbr, name, base.DEC)
  elseif kind == "f64" then f = ProtoField.double(abbr, name)
  elseif kind == "b" then f = ProtoField.bool(abbr, name)
  elseif kind == "s" then f = ProtoField.string(abbr, name)
  elseif kind == "y" then f = ProtoField.bytes(abbr, name)
  elseif kind == "u" then f = ProtoField.guid(abbr, name)
  else f = ProtoField.none(abbr, name) end
  pf_list[#pf_list + 1] = f
  return f
end
for i, s in ipairs(PF_SPECS) do PF[i] = new_pf(s[1], s[2], s[3]) end

local H = {
  length = new_pf("kwire.length", "Length", "i32"),
  kind = new_pf("kwire.kind", "Kind", "s"),
  api_key = new_pf("kwire.api_key", "API key", "i16"),
  api_name = new_pf("kwire.api_name", "API", "s"),
  api_version = new_pf("kwire.api_version", "API version", "i16"),
  correlation_id = new_pf("kwire.correlation_id", "Correlation id", "i32"),
  client_id = new_pf("kwire.client_id", "Client id", "s"),
  header = new_pf("kwire.header", "Header", "none"),
  header_version = new_pf("kwire.header_version", "Header version", "i16"),
  tagged = new_pf("kwire.tagged_fields", "Tagged fields", "u32"),
  tag = new_pf("kwire.tag", "Tag", "u32"),
  unknown_tag = new_pf("kwire.unknown_tag", "Unknown tagged field", "y"),
  body = new_pf("kwire.body", "Body", "none"),
  element = new_pf("kwire.element", "Element", "none"),
  array = new_pf("kwire.array", "Array", "none"),
  count = new_pf("kwire.count", "Count", "i32"),
  null = new_pf("kwire.null", "Null", "b"),
  response_in = new_pf("kwire.response_in", "Response in frame", "u32"),
  request_in = new_pf("kwire.request_in", "Request in frame", "u32"),
  sasl_token = new_pf("kwire.sasl_token", "SASL token", "y"),
  rest = new_pf("kwire.undecoded", "Undecoded bytes", "y"),
  -- RecordBatch v2 (magic 2)
  batch = new_pf("kwire.batch", "RecordBatch", "none"),
  base_offset = new_pf("kwire.batch.baseOffset", "baseOffset", "i64"),
  batch_length = new_pf("kwire.batch.batchLength", "batchLength", "i32"),
  leader_epoch = new_pf("kwire.batch.partitionLeaderEpoch", "partitionLeaderEpoch", "i32"),
  magic = new_pf("kwire.batch.magic", "magic", "i8"),
  crc = new_pf("kwire.batch.crc", "crc", "u32"),
  attributes = new_pf("kwire.batch.attributes", "attributes", "i16"),
  last_offset_delta = new_pf("kwire.batch.lastOffsetDelta", "lastOffsetDelta", "i32"),
  base_timestamp = new_pf("kwire.batch.baseTimestamp", "baseTimestamp", "i64"),
  max_timestamp = new_pf("kwire.batch.maxTimestamp", "maxTimestamp", "i64"),
  producer_id = new_pf("kwire.batch.producerId", "producerId", "i64"),
  producer_epoch = new_pf("kwire.batch.producerEpoch", "producerEpoch", "i16"),
  base_sequence = new_pf("kwire.batch.baseSequence", "baseSequence", "i32"),
  records_count = new_pf("kwire.batch.recordsCount", "recordsCount", "i32"),
  compressed = new_pf("kwire.batch.compressed", "Compressed records", "y"),
  decompressed = new_pf("kwire.decompressed", "Decompressed", "none"),
  partial = new_pf("kwire.partial_batch", "Partial batch", "y"),
  record = new_pf("kwire.record", "Record", "none"),
  rec_length = new_pf("kwire.record.length", "length", "i32"),
  rec_attributes = new_pf("kwire.record.attributes", "attributes", "i8"),
  rec_ts_delta = new_pf("kwire.record.timestampDelta", "timestampDelta", "i64"),
  rec_offset_delta = new_pf("kwire.record.offsetDelta", "offsetDelta", "i32"),
  rec_key = new_pf("kwire.record.key", "key", "y"),
  rec_value = new_pf("kwire.record.value", "value", "y"),
  rec_headers = new_pf("kwire.record.headerCount", "headerCount", "i32"),
  rec_header = new_pf("kwire.record.header", "Header", "none"),
  rec_header_key = new_pf("kwire.record.headerKey", "headerKey", "s"),
  rec_header_value = new_pf("kwire.record.headerValue", "headerValue", "y"),
  -- Legacy messages (magic 0 and 1)
  message = new_pf("kwire.message", "Message", "none"),
  msg_offset = new_pf("kwire.message.offset", "offset", "i64"),
  msg_size = new_pf("kwire.message.messageSize", "messageSize", "i32"),
  msg_crc = new_pf("kwire.message.crc", "crc", "u32"),
  msg_magic = new_pf("kwire.message.magic", "magic", "i8"),
  msg_attributes = new_pf("kwire.message.attributes", "attributes", "i8"),
  msg_timestamp = new_pf("kwire.message.timestamp", "timestamp", "i64"),
  msg_wrapper = new_pf("kwire.message.wrapper", "Compressed wrapper", "b"),
}
kw.fields = pf_list

local E = {
  malformed = ProtoExpert.new("kwire.malformed", "Malformed Kafka data",
    expert.group.MALFORMED, expert.severity.ERROR),
  note = ProtoExpert.new("kwire.note", "Note", expert.group.COMMENTS_GROUP, expert.severity.NOTE),
  warn = ProtoExpert.new("kwire.warning", "Warning", expert.group.PROTOCOL, expert.severity.WARN),
  internal = ProtoExpert.new("kwire.internal", "kwire dissector error",
    expert.group.MALFORMED, expert.severity.ERROR),
}
kw.experts = { E.malformed, E.note, E.warn, E.internal }

kw.prefs.ports = Pref.range("Kafka TCP ports", "9092", "TCP ports Kafka brokers listen on", 65535)
kw.prefs.tls_ports = Pref.range("Kafka TLS ports", "9093",
  "TLS ports whose decrypted data is Kafka (needs the TLS keys)", 65535)

local f_stream = Field.new("tcp.stream")

-- A tree stand-in for trial decodes (the ApiVersions v0 fallback): every call is a no-op.
local FAKE = {}
FAKE.__index = FAKE
local fake_tree = setmetatable({}, FAKE)
function FAKE.add() return fake_tree end
function FAKE.append_text() end
function FAKE.set_text() end
function FAKE.set_len() end
function FAKE.set_generated() end
function FAKE.add_tvb_expert_info() end
function FAKE.add_proto_expert_info() end

local function inr(v, lo, hi) return v >= lo and v <= hi end

-- Records a problem at the current byte and stops the walk.
local function bad(st, tree, msg)
  if not st.err then st.err = msg end
  if st.fake then return false end
  local n = st.tvb:len()
  local p = st.pos
  if p >= n then p = n - 1 end
  if p < 0 then
    tree:add_proto_expert_info(E.malformed, msg)
  else
    tree:add_tvb_expert_info(E.malformed, st.tvb(p, 1), msg)
  end
  return false
end

local function left(st) return st.lim - st.pos end

-- Unsigned LEB128 (uvarint); nil when cut or longer than `max` bytes.
local function uvarint(st, max)
  local v, mul, i = 0, 1, 0
  while true do
    if st.pos + i >= st.lim or i >= max then return nil end
    local b = st.tvb(st.pos + i, 1):uint()
    v = v + (b % 128) * mul
    i = i + 1
    if b < 128 then return v, i end
    mul = mul * 128
  end
end

-- Zigzag varint (records); nil when cut.
local function varint(st, max)
  local u, n = uvarint(st, max)
  if not u then return nil end
  if u % 2 == 0 then return u / 2, n end
  return -(u + 1) / 2, n
end

local SIZE = { i8 = 1, i16 = 2, u16 = 2, i32 = 4, u32 = 4, i64 = 8, f64 = 8, b = 1, u = 16 }

-- A length or count prefix: classic int16/int32, or compact uvarint (length + 1).
-- Returns n (-1 for null) and the prefix's size, or nil after reporting.
local function prefix(st, tree, compact, wide, what)
  if compact then
    local u, n = uvarint(st, 5)
    if not u then return bad(st, tree, what .. ": compact length cut or too long") and nil end
    return u - 1, n
  end
  local w = wide and 4 or 2
  if left(st) < w then return bad(st, tree, what .. ": length prefix cut") and nil end
  return st.tvb(st.pos, w):int(), w
end

local walk_fields -- forward

-- One value of a primitive type `t` as field `pf`; returns the item or nil.
local function prim(st, tree, t, pf, f, ver, flex, name)
  local sz = SIZE[t]
  if sz then
    if left(st) < sz then return bad(st, tree, name .. ": " .. sz .. " bytes needed, " .. left(st) .. " left") and nil end
    local it = tree:add(pf, st.tvb(st.pos, sz))
    st.pos = st.pos + sz
    return it
  end
  local compact = flex
  if f and f[13] >= 0 then compact = inr(ver, f[13], f[14]) end
  local nullable = f and inr(ver, f[5], f[6])
  if t == "s" then
    local start = st.pos
    local n, pl = prefix(st, tree, compact, false, name)
    if not n then return nil end
    if n < -1 then return bad(st, tree, name .. ": string length " .. n) and nil end
    if n > left(st) - pl then
      return bad(st, tree, name .. ": string of " .. n .. " bytes, " .. (left(st) - pl) .. " left") and nil
    end
    local it
    if n < 0 then
      it = tree:add(pf, st.tvb(start, pl), "")
      it:add(H.null, st.tvb(start, pl), true)
      it:append_text("[null]")
      if not nullable then it:add_proto_expert_info(E.warn, name .. ": null, and not nullable at v" .. ver) end
      st.pos = start + pl
    else
      local s = n > 0 and st.tvb(start + pl, n):string(ENC_UTF_8) or ""
      it = tree:add(pf, st.tvb(start, pl + n), s)
      st.pos = start + pl + n
    end
    return it
  end
  -- bytes and records
  local start = st.pos
  local n, pl = prefix(st, tree, compact, true, name)
  if not n then return nil end
  if n < -1 then return bad(st, tree, name .. ": bytes length " .. n) and nil end
  if n > left(st) - pl then
    return bad(st, tree, name .. ": " .. n .. " bytes, " .. (left(st) - pl) .. " left") and nil
  end
  if t == "r" then
    local it = tree:add(pf, st.tvb(start, pl + math.max(n, 0)))
    if n < 0 then
      it:add(H.null, st.tvb(start, pl), true)
      it:append_text(" [null]")
      st.pos = start + pl
      return it
    end
    it:append_text(" (" .. n .. " bytes)")
    st.pos = start + pl
    local lim = st.lim
    st.lim = st.pos + n
    st.records(st, it, st.pos + n)
    st.pos = start + pl + n
    st.lim = lim
    return it
  end
  -- An FT_BYTES item shows the bytes of its range (Wireshark reads as many from a value
  -- as the range is long), so it covers the data alone, after the length.
  local it = tree:add(pf, st.tvb(start + pl, math.max(n, 0)))
  if n < 0 then
    it:add(H.null, st.tvb(start, pl), true)
    it:append_text("[null]")
  end
  st.pos = start + pl + math.max(n, 0)
  return it
end

-- A struct's fields (no marker): `list` is an ST entry.
local function struct_body(st, tree, list, ver, flex, depth)
  if depth > MAX_DEPTH then return bad(st, tree, "structs nested deeper than " .. MAX_DEPTH) end
  return walk_fields(st, tree, list, ver, flex, depth + 1)
end

-- One field `f` at version `ver`.
local function field(st, tree, f, ver, flex, depth)
  local t, name, pf = f[2], f[1], PF[f[10]]
  if t == "a" then
    local start = st.pos
    local compact = flex
    if f[13] >= 0 then compact = inr(ver, f[13], f[14]) end
    local n, pl = prefix(st, tree, compact, true, name)
    if not n then return false end
    -- an array of structs is its field's subtree; of primitives, a kwire.array one
    local sub = tree:add(f[12] == "t" and pf or H.array, st.tvb(start, pl))
    if f[12] ~= "t" then sub:set_text(name) end
    if n < 0 then
      sub:add(H.null, st.tvb(start, pl), true)
      sub:append_text(" [null]")
      if not inr(ver, f[5], f[6]) then sub:add_proto_expert_info(E.warn, name .. ": null, and not nullable at v" .. ver) end
      st.pos = start + pl
      return true
    end
    sub:add(H.count, st.tvb(start, pl), n)
    st.pos = start + pl
    local e = f[12]
    local min = SIZE[e] or 1
    if e == "t" then min = flex and 1 or 0 end
    if n * min > left(st) or (min == 0 and n > left(st) + 65536) then
      local l = left(st)
      st.pos = start -- the count is what is wrong
      return bad(st, sub, name .. ": " .. n .. " elements, " .. l .. " bytes left")
    end
    sub:append_text(" (" .. n .. ")")
    for i = 0, n - 1 do
      if e == "t" then
        local es = st.pos
        local el = sub:add(H.element, st.tvb(es, left(st) > 0 and 1 or 0))
        el:set_text(name .. "[" .. i .. "]")
        local ok = struct_body(st, el, ST[f[11]], ver, flex, depth)
        el:set_len(st.pos - es)
        if not ok then return false end
      else
        if not prim(st, sub, e, pf, nil, ver, compact, name .. "[" .. i .. "]") then return false end
      end
    end
    sub:set_len(st.pos - start)
    return true
  elseif t == "t" then
    local start = st.pos
    local sub = tree:add(pf, st.tvb(start, left(st) > 0 and 1 or 0))
    if inr(ver, f[5], f[6]) then
      if left(st) < 1 then return bad(st, sub, name .. ": null marker cut") end
      local m = st.tvb(start, 1):int()
      st.pos = start + 1
      if m < 0 then
        sub:add(H.null, st.tvb(start, 1), true)
        sub:append_text(" [null]")
        sub:set_len(1)
        return true
      end
    end
    local ok = struct_body(st, sub, ST[f[11]], ver, flex, depth)
    sub:set_len(st.pos - start)
    return ok
  end
  return prim(st, tree, t, pf, f, ver, flex, name) and true or false
end

-- The tagged-field section of a flexible struct.
local function tagged(st, tree, list, ver, flex, depth)
  local start = st.pos
  local n, nl = uvarint(st, 5)
  if not n then return bad(st, tree, "tagged fields: count cut") end
  local it = tree:add(H.tagged, st.tvb(start, nl), n)
  st.pos = start + nl
  for _ = 1, n do
    local ts = st.pos
    local tag, tl = uvarint(st, 5)
    if not tag then return bad(st, it, "tagged field: tag cut") end
    st.pos = st.pos + tl
    local size, sl = uvarint(st, 5)
    if not size then return bad(st, it, "tagged field " .. tag .. ": size cut") end
    st.pos = st.pos + sl
    if size > left(st) then return bad(st, it, "tagged field " .. tag .. ": " .. size .. " bytes, " .. left(st) .. " left") end
    local known
    for _, f in ipairs(list) do
      if f[9] == tag and inr(ver, f[7], f[8]) then known = f end
    end
    if known then
      local lim = st.lim
      st.lim = st.pos + size
      local ok = field(st, it, known, ver, flex, depth)
      if ok and st.pos < st.lim then
        it:add_tvb_expert_info(E.warn, st.tvb(st.pos, st.lim - st.pos), "tagged field " .. known[1] .. ": " .. (st.lim - st.pos) .. " bytes left over")
      end
      st.pos = st.lim
      st.lim = lim
      if not ok then return false end
    else
      local u = it:add(H.unknown_tag, st.tvb(ts, st.pos - ts + size))
      u:append_text(" (tag " .. tag .. ", " .. size .. " bytes)")
      st.pos = st.pos + size
    end
  end
  it:set_len(st.pos - start)
  return true
end

walk_fields = function(st, tree, list, ver, flex, depth)
  for _, f in ipairs(list) do
    if inr(ver, f[3], f[4]) and not (f[9] >= 0 and inr(ver, f[7], f[8])) then
      if not field(st, tree, f, ver, flex, depth) then return false end
    end
  end
  if flex then return tagged(st, tree, list, ver, flex, depth) end
  return true
end

-- ------------------------------------------------------------------ records

local CODECS = { [0] = "none", [1] = "gzip", [2] = "snappy", [3] = "lz4", [4] = "zstd" }

local function add_fixed(st, tree, pf, n)
  local it = tree:add(pf, st.tvb(st.pos, n))
  st.pos = st.pos + n
  return it
end

-- A varint field of a record; returns its value or nil.
local function rec_varint(st, tree, pf, max, what)
  local v, n = varint(st, max)
  if not v then return bad(st, tree, what .. ": varint cut or too long") and nil end
  -- varlongs go in FT_INT64 fields, which take an Int64
  tree:add(pf, st.tvb(st.pos, n), max > 5 and Int64.new(v) or v)
  st.pos = st.pos + n
  return v
end

-- A varint-length byte field of a record (key, value, header value).
local function rec_bytes(st, tree, pf, what, as_string)
  local start = st.pos
  local n, nl = varint(st, 5)
  if not n then return bad(st, tree, what .. ": length cut") end
  if n < -1 or n > left(st) - nl then return bad(st, tree, what .. ": length " .. n .. ", " .. (left(st) - nl) .. " bytes left") end
  local it
  if as_string and n >= 0 then
    it = tree:add(pf, st.tvb(start, nl + n), n > 0 and st.tvb(start + nl, n):string(ENC_UTF_8) or "")
  elseif as_string then
    it = tree:add(pf, st.tvb(start, nl), "")
  else
    -- bytes: the data alone (see prim)
    it = tree:add(pf, st.tvb(start + nl, math.max(n, 0)))
  end
  if n < 0 then
    it:add(H.null, st.tvb(start, nl), true)
    it:append_text("[null]")
  end
  st.pos = start + nl + math.max(n, 0)
  return true
end

local function record(st, tree, i)
  local start = st.pos
  local r = tree:add(H.record, st.tvb(start, left(st) > 0 and 1 or 0))
  r:set_text("Record[" .. i .. "]")
  local len = rec_varint(st, r, H.rec_length, 5, "record length")
  if not len then return false end
  if len < 0 or len > left(st) then return bad(st, r, "record length " .. len .. ", " .. left(st) .. " bytes left") end
  local lim = st.lim
  st.lim = st.pos + len
  local ok = false
  repeat
    if left(st) < 1 then bad(st, r, "record attributes cut") break end
    add_fixed(st, r, H.rec_attributes, 1)
    if not rec_varint(st, r, H.rec_ts_delta, 10, "timestampDelta") then break end
    if not rec_varint(st, r, H.rec_offset_delta, 5, "offsetDelta") then break end
    if not rec_bytes(st, r, H.rec_key, "key") then break end
    if not rec_bytes(st, r, H.rec_value, "value") then break end
    local hc = rec_varint(st, r, H.rec_headers, 5, "headerCount")
    if not hc then break end
    if hc < 0 or hc > left(st) then bad(st, r, "headerCount " .. hc .. ", " .. left(st) .. " bytes left") break end
    local hok = true
    for h = 0, hc - 1 do
      local hs = st.pos
      local hi = r:add(H.rec_header, st.tvb(hs, left(st) > 0 and 1 or 0))
      hi:set_text("Header[" .. h .. "]")
      hok = rec_bytes(st, hi, H.rec_header_key, "headerKey", true) and rec_bytes(st, hi, H.rec_header_value, "headerValue")
      hi:set_len(st.pos - hs)
      if not hok then break end
    end
    if not hok then break end
    if st.pos < st.lim then
      r:add_tvb_expert_info(E.warn, st.tvb(st.pos, st.lim - st.pos), (st.lim - st.pos) .. " bytes after the record's fields")
      st.pos = st.lim
    end
    ok = true
  until true
  st.lim = lim
  r:set_len(st.pos - start)
  return ok
end

-- Records of a batch from `tvb` (the frame, or decompressed bytes).
local function record_list(st, tree, tvb, off, len, count)
  local sub = { tvb = tvb, pos = off, lim = off + len, fake = st.fake, records = st.records }
  for i = 0, count - 1 do
    if sub.pos >= sub.lim then
      bad(sub, tree, "recordsCount " .. count .. " but only " .. i .. " records")
      return
    end
    if not record(sub, tree, i) then return end
  end
  if sub.pos < sub.lim then
    tree:add_tvb_expert_info(E.warn, tvb(sub.pos, sub.lim - sub.pos), (sub.lim - sub.pos) .. " bytes after the last record")
  end
end

local function inflate(st, tree, off, len, what)
  if len <= 0 then return nil end
  local ok, r = pcall(function() return st.tvb(off, len):uncompress(what) end)
  if ok and r and r:len() > 0 and r:len() <= MAX_INFLATE then return r:tvb() end
  tree:add_tvb_expert_info(E.warn, st.tvb(off, len), "gzip data that does not decompress")
  return nil
end

local function batch_v2(st, tree, total)
  local start = st.pos
  local b = tree:add(H.batch, st.tvb(start, total))
  if total < 61 then
    return bad(st, b, "RecordBatch of " .. total .. " bytes: its header alone is 61")
  end
  add_fixed(st, b, H.base_offset, 8)
  add_fixed(st, b, H.batch_length, 4)
  add_fixed(st, b, H.leader_epoch, 4)
  add_fixed(st, b, H.magic, 1)
  add_fixed(st, b, H.crc, 4)
  local attrs = st.tvb(st.pos, 2):uint()
  add_fixed(st, b, H.attributes, 2)
  add_fixed(st, b, H.last_offset_delta, 4)
  add_fixed(st, b, H.base_timestamp, 8)
  add_fixed(st, b, H.max_timestamp, 8)
  add_fixed(st, b, H.producer_id, 8)
  add_fixed(st, b, H.producer_epoch, 2)
  add_fixed(st, b, H.base_sequence, 4)
  local count = st.tvb(st.pos, 4):int()
  add_fixed(st, b, H.records_count, 4)
  local rlen = start + total - st.pos
  local codec = attrs % 8
  if codec ~= 0 then b:append_text(" (" .. (CODECS[codec] or ("codec " .. codec)) .. ")") end
  if count < 0 then
    bad(st, b, "recordsCount " .. count)
  elseif codec == 0 then
    record_list(st, b, st.tvb, st.pos, rlen, count)
  elseif codec == 1 then
    local c = b:add(H.compressed, st.tvb(st.pos, math.max(rlen, 0)))
    local t = inflate(st, c, st.pos, rlen, "Decompressed records (gzip)")
    if t then
      local d = c:add(H.decompressed, t())
      d:append_text(" (gzip, " .. t:len() .. " bytes)")
      record_list(st, d, t, 0, t:len(), count)
    end
  else
    local c = b:add(H.compressed, st.tvb(st.pos, math.max(rlen, 0)))
    c:add_proto_expert_info(E.note, (CODECS[codec] or ("codec " .. codec)) ..
      " records shown compressed: Wireshark's Lua API decompresses zlib and gzip only")
  end
  st.pos = start + total
  return true
end

local legacy_set -- forward

local function legacy(st, tree, total, depth)
  local start = st.pos
  local m = tree:add(H.message, st.tvb(start, total))
  if total < 26 then return bad(st, m, "message of " .. total .. " bytes: too short") end
  add_fixed(st, m, H.msg_offset, 8)
  add_fixed(st, m, H.msg_size, 4)
  add_fixed(st, m, H.msg_crc, 4)
  local magic = st.tvb(st.pos, 1):int()
  add_fixed(st, m, H.msg_magic, 1)
  local attrs = st.tvb(st.pos, 1):uint()
  add_fixed(st, m, H.msg_attributes, 1)
  local lim = st.lim
  st.lim = start + total
  local ok = true
  if magic == 1 then
    if left(st) < 8 then ok = bad(st, m, "timestamp cut") else add_fixed(st, m, H.msg_timestamp, 8) end
  end
  local codec = attrs % 8
  local vstart
  if ok then
    ok = prim(st, m, "y", H.rec_key, nil, 0, false, "key") and true or false
  end
  if ok then
    vstart = st.pos
    ok = prim(st, m, "y", H.rec_value, nil, 0, false, "value") and true or false
  end
  if ok and codec ~= 0 then
    m:set_text("Message (compressed wrapper, " .. (CODECS[codec] or ("codec " .. codec)) .. ")")
    m:add(H.msg_wrapper, st.tvb(start + 17, 1), true):set_generated()
    local vlen = st.tvb(vstart, 4):int()
    if codec == 1 and vlen > 0 and depth < 4 then
      local t = inflate(st, m, vstart + 4, vlen, "Decompressed messages (gzip)")
      if t then
        local d = m:add(H.decompressed, t())
        d:append_text(" (gzip, " .. t:len() .. " bytes)")
        local sub = { tvb = t, pos = 0, lim = t:len(), fake = st.fake, records = st.records }
        legacy_set(sub, d, depth + 1)
      end
    elseif codec ~= 1 then
      m:add_proto_expert_info(E.note, (CODECS[codec] or ("codec " .. codec)) ..
        " messages shown compressed: Wireshark's Lua API decompresses zlib and gzip only")
    end
  elseif ok then
    m:set_text("Message (magic " .. magic .. ")")
  end
  st.pos = start + total
  st.lim = lim
  return ok
end

-- Entries of a records field: RecordBatch v2 or legacy messages, by the magic at byte 16.
legacy_set = function(st, tree, depth)
  while st.pos < st.lim do
    local l = left(st)
    if l < 12 then
      tree:add(H.partial, st.tvb(st.pos, l)):append_text(" (" .. l .. " bytes, too few for an offset and a length)")
      st.pos = st.lim
      return
    end
    local len = st.tvb(st.pos + 8, 4):int()
    local total = len + 12
    if len < 0 then bad(st, tree, "entry length " .. len) return end
    if total > l then
      tree:add(H.partial, st.tvb(st.pos, l)):append_text(" (" .. l .. " of " .. total .. " bytes)")
      st.pos = st.lim
      return
    end
    if len < 5 then bad(st, tree, "entry length " .. len .. " leaves no room for a magic byte") return end
    local magic = st.tvb(st.pos + 16, 1):int()
    local ok
    if magic == 2 then ok = batch_v2(st, tree, total)
    elseif magic == 0 or magic == 1 then ok = legacy(st, tree, total, depth)
    else bad(st, tree, "unknown magic " .. magic .. " at byte 16 of the entry") return end
    if not ok then return end
  end
end

local function records(st, tree, lim)
  local sub = { tvb = st.tvb, pos = st.pos, lim = lim, fake = st.fake, records = records }
  legacy_set(sub, tree, 0)
end

-- ------------------------------------------------------------------ messages

local function header_version(request, key, ver, flexible)
  if request then
    if key == 7 and ver == 0 then return 0 end
    return flexible and 2 or 1
  end
  if key == 18 then return 0 end
  return flexible and 1 or 0
end

local function find_def(key, request, ver)
  local a = APIS[key]
  if not a then return nil end
  for _, d in ipairs(request and a.q or a.r) do
    if inr(ver, d[1], d[2]) then return d end
  end
  return nil
end

-- The body of a message at `ver`; returns whether it decoded cleanly.
local function body(st, tree, key, request, ver)
  local d = find_def(key, request, ver)
  local a = APIS[key]
  if not d then
    local what = a and (a.n .. (request and " request" or " response") .. " v" .. ver) or ("api_key " .. key)
    bad(st, tree, "no definition of " .. what)
    return false
  end
  local b = tree:add(H.body, st.tvb(st.pos, left(st) > 0 and left(st) or 0))
  b:set_text(a.n .. (request and "Request" or "Response") .. " v" .. ver)
  local ok = walk_fields(st, b, ST[d[5]], ver, inr(ver, d[3], d[4]), 0)
  if ok and st.pos < st.lim then
    b:add_tvb_expert_info(E.warn, st.tvb(st.pos, st.lim - st.pos), (st.lim - st.pos) .. " bytes after the body")
  end
  return ok
end

local streams = {}   -- tcp.stream -> { corr -> {key, ver, frame} } and SASL state
local by_frame = {}  -- frame number .. ":" .. offset -> what was decided on the first pass
local resp_in = {}   -- request frame number -> response frame number

function kw.init()
  streams = {}
  by_frame = {}
  resp_in = {}
end

local function stream_state(pinfo)
  local s = f_stream()
  local id = s and s.value or -1
  local t = streams[id]
  if not t then
    t = { pending = {}, sasl_corr = nil, sasl_raw = false }
    streams[id] = t
  end
  return t
end

local function is_request(pinfo)
  local dst, src = pinfo.dst_port, pinfo.src_port
  if pinfo.match_uint == dst then return true end
  if pinfo.match_uint == src then return false end
  return dst < src
end

local function plausible_request(tvb)
  if tvb:len() < 12 then return false end
  local key, ver = tvb(4, 2):int(), tvb(6, 2):int()
  return find_def(key, true, ver) ~= nil
end

-- The Info column: the first PDU of a packet replaces TCP's text, the others follow.
local info_frame = -1
local function info(pinfo, text)
  if info_frame ~= pinfo.number then
    info_frame = pinfo.number
    pinfo.cols.info = text
  else
    pinfo.cols.info:append(", " .. text)
  end
end

local function dissect_pdu(tvb, pinfo, root)
  local n = tvb:len()
  local request = is_request(pinfo)
  local tree = root:add(kw, tvb(0, n))
  tree:add(H.length, tvb(0, 4))
  local ss = stream_state(pinfo)
  local memo_key = pinfo.number .. ":" .. tostring(tvb:offset())
  local memo = by_frame[memo_key]
  pinfo.cols.protocol = "Kafka"
  if not memo then
    memo = {}
    -- SASL v0 raw tokens (KIP-43): after a successful SaslHandshake v0.
    if ss.sasl_raw and not (request and plausible_request(tvb)) then
      memo.sasl = true
    elseif request then
      ss.sasl_raw = false
    end
    if not memo.sasl and n >= 12 and request then
      local key, ver, corr = tvb(4, 2):int(), tvb(6, 2):int(), tvb(8, 4):int()
      ss.pending[corr] = { key = key, ver = ver, frame = pinfo.number }
      if key == 17 and ver == 0 then ss.sasl_corr = corr end
      memo.key, memo.ver = key, ver
    elseif not memo.sasl and n >= 8 then
      local corr = tvb(4, 4):int()
      local p = ss.pending[corr]
      if p then
        memo.key, memo.ver, memo.req_frame = p.key, p.ver, p.frame
        resp_in[p.frame] = pinfo.number
        ss.pending[corr] = nil
      end
      if ss.sasl_corr == corr then
        ss.sasl_corr = nil
        if n >= 10 and tvb(8, 2):int() == 0 then ss.sasl_raw = true end
      end
    end
    by_frame[memo_key] = memo
  end
  if memo.sasl then
    tree:add(H.kind, tvb(0, 4), request and "request" or "response"):set_generated()
    if n > 4 then tree:add(H.sasl_token, tvb(4, n - 4)) end
    tree:append_text(": SASL token (" .. (n - 4) .. " bytes)")
    info(pinfo, "SASL token")
    return
  end
  local st = { tvb = tvb, pos = 4, lim = n, records = records }
  local hdr = tree:add(H.header, tvb(4, math.min(n - 4, 1)))
  if request then
    tree:add(H.kind, tvb(0, 4), "request"):set_generated()
    if n < 12 then bad(st, hdr, "request header cut: " .. (n - 4) .. " bytes") return end
    local key, ver = tvb(4, 2):int(), tvb(6, 2):int()
    local a = APIS[key]
    local d = find_def(key, true, ver)
    local hv = header_version(true, key, ver, d and inr(ver, d[3], d[4]))
    hdr:add(H.header_version, tvb(4, 0), hv):set_generated()
    hdr:add(H.api_key, tvb(4, 2))
    if a then hdr:add(H.api_name, tvb(4, 2), a.n):set_generated() end
    hdr:add(H.api_version, tvb(6, 2))
    hdr:add(H.correlation_id, tvb(8, 4))
    st.pos = 12
    if hv >= 1 then
      if not prim(st, hdr, "s", H.client_id, { [5] = 0, [6] = 32767, [13] = -1 }, 0, false, "client_id") then
        hdr:set_len(st.pos - 4)
        return
      end
    end
    if hv >= 2 and not tagged(st, hdr, {}, ver, true, 0) then hdr:set_len(st.pos - 4) return end
    hdr:set_len(st.pos - 4)
    local name = a and a.n or ("api_key " .. key)
    tree:append_text(": " .. name .. " v" .. ver .. " request")
    info(pinfo, name .. " v" .. ver .. " request, correlation id " .. tvb(8, 4):int())
    if resp_in[pinfo.number] then
      tree:add(H.response_in, tvb(8, 4), resp_in[pinfo.number]):set_generated()
    end
    body(st, tree, key, true, ver)
    return
  end
  tree:add(H.kind, tvb(0, 4), "response"):set_generated()
  if n < 8 then bad(st, hdr, "response header cut: " .. (n - 4) .. " bytes") return end
  if not memo.key then
    hdr:add(H.correlation_id, tvb(4, 4))
    hdr:set_len(4)
    tree:append_text(": response (request not seen)")
    info(pinfo, "response (request not seen), correlation id " .. tvb(4, 4):int())
    tree:add(H.rest, tvb(8, n - 8))
    tree:add_proto_expert_info(E.note, "response whose request is not in the capture: its API and version are unknown")
    return
  end
  local key, ver = memo.key, memo.ver
  local a = APIS[key]
  local d = find_def(key, false, ver)
  local hv = header_version(false, key, ver, d and inr(ver, d[3], d[4]))
  hdr:add(H.header_version, tvb(4, 0), hv):set_generated()
  hdr:add(H.api_key, tvb(4, 0), key):set_generated()
  if a then hdr:add(H.api_name, tvb(4, 0), a.n):set_generated() end
  hdr:add(H.api_version, tvb(4, 0), ver):set_generated()
  hdr:add(H.correlation_id, tvb(4, 4))
  st.pos = 8
  if hv >= 1 and not tagged(st, hdr, {}, ver, true, 0) then hdr:set_len(st.pos - 4) return end
  hdr:set_len(st.pos - 4)
  tree:add(H.request_in, tvb(4, 4), memo.req_frame):set_generated()
  local name = a and a.n or ("api_key " .. key)
  tree:append_text(": " .. name .. " v" .. ver .. " response")
  info(pinfo, name .. " v" .. ver .. " response, correlation id " .. tvb(4, 4):int())
  -- A broker that does not support the requested ApiVersions version answers with a v0
  -- body carrying UNSUPPORTED_VERSION (35).
  if key == 18 and ver > 0 and n >= 10 and tvb(8, 2):int() == 35 then
    local trial = { tvb = tvb, pos = st.pos, lim = n, fake = true, records = records }
    if not body(trial, fake_tree, key, false, ver) then
      local t0 = { tvb = tvb, pos = st.pos, lim = n, fake = true, records = records }
      if body(t0, fake_tree, key, false, 0) and t0.pos == n then
        tree:add_proto_expert_info(E.note, "the request was ApiVersions v" .. ver ..
          "; the broker answered UNSUPPORTED_VERSION with a v0 body")
        ver = 0
      end
    end
  end
  body(st, tree, key, false, ver)
end

local function pdu_len(tvb, pinfo, off)
  local size = tvb(off, 4):int()
  local rest = tvb:len() - off
  if size < 0 or size > MAX_FRAME then return rest end -- not a frame: show what is there
  return size + 4
end

local function safe_pdu(tvb, pinfo, root)
  local ok, e = pcall(dissect_pdu, tvb, pinfo, root)
  if not ok then
    root:add_proto_expert_info(E.internal, "kwire_kafka.lua: " .. tostring(e))
  end
  return tvb:len()
end

function kw.dissector(tvb, pinfo, root)
  local n = tvb:len()
  if n < 4 then
    pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
    pinfo.desegment_offset = 0
    return n
  end
  local size = tvb(0, 4):int()
  -- TLS on a port taken for plain Kafka: not Kafka's framing.
  if tvb(0, 1):uint() == 0x16 and tvb(1, 1):uint() == 3 then
    pinfo.cols.protocol = "Kafka"
    pinfo.cols.info = "TLS on a Kafka port (give Wireshark the keys, and the port under Kafka TLS ports)"
    root:add(kw, tvb()):add_proto_expert_info(E.note, "TLS record on a Kafka port")
    return n
  end
  if size < 0 or size > MAX_FRAME then
    local t = root:add(kw, tvb())
    t:add_tvb_expert_info(E.malformed, tvb(0, 4), "size prefix " .. size .. ": not the start of a Kafka frame")
    return n
  end
  dissect_tcp_pdus(tvb, root, 4, pdu_len, safe_pdu, true)
  return n
end

local registered = { tcp = {}, tls = {} }

local function ports_of(s)
  local out = {}
  for part in string.gmatch(s or "", "[^,%s]+") do
    local a, b = string.match(part, "^(%d+)-(%d+)$")
    if a then
      for p = tonumber(a), math.min(tonumber(b), tonumber(a) + 1024) do out[#out + 1] = p end
    elseif tonumber(part) then
      out[#out + 1] = tonumber(part)
    end
  end
  return out
end

local function register()
  local tcp = DissectorTable.get("tcp.port")
  local tls = DissectorTable.get("tls.port")
  for _, p in ipairs(registered.tcp) do tcp:remove(p, kw) end
  for _, p in ipairs(registered.tls) do tls:remove(p, kw) end
  registered.tcp = ports_of(tostring(kw.prefs.ports))
  registered.tls = ports_of(tostring(kw.prefs.tls_ports))
  for _, p in ipairs(registered.tcp) do tcp:add(p, kw) end
  for _, p in ipairs(registered.tls) do tls:add(p, kw) end
end

function kw.prefs_changed() register() end
register()
