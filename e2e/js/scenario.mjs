// A new user's first session with @platformatic/kafka against queen-kafka:
// a client that speaks only modern protocol versions (CreateTopics v7,
// Metadata v10+, Fetch v12+, FindCoordinator v4+, JoinGroup v6+, Heartbeat
// v4, OffsetCommit v8). Run by e2e/jsclients_test.go (`make test-js`), or by
// hand against any bootstrap:
//
//	QUEEN_KAFKA_BOOTSTRAP=127.0.0.1:9092 node scenario.mjs
//
// Environment: QUEEN_KAFKA_BOOTSTRAP (comma-separated host:port, required),
// SCENARIO_RECORDS (default 300), SCENARIO_TIMEOUT_MS (default 120000),
// SCENARIO_PREFIX (topic and group name prefix, default "pfk").
//
// Every step prints one line; any error, a count that does not match or the
// timeout exits non-zero with a message saying which step and why.
import { spawn } from 'node:child_process'
import { Admin, Consumer, Producer, ProduceAcks, MessagesStreamModes, MessagesStreamFallbackModes, connectionsApiChannel, protocolAPIsById, stringSerializers, stringDeserializers } from '@platformatic/kafka'

const bootstrap = (process.env.QUEEN_KAFKA_BOOTSTRAP ?? '').split(',').map(s => s.trim()).filter(Boolean)
const records = Number(process.env.SCENARIO_RECORDS ?? 300)
const timeoutMs = Number(process.env.SCENARIO_TIMEOUT_MS ?? 120000)
const prefix = process.env.SCENARIO_PREFIX ?? 'pfk'
const partitions = 3

if (bootstrap.length === 0) fail('setup', 'QUEEN_KAFKA_BOOTSTRAP is not set')
if (!Number.isInteger(records) || records < partitions) fail('setup', `SCENARIO_RECORDS=${process.env.SCENARIO_RECORDS}: want an integer >= ${partitions}`)

const run = `${Date.now()}-${process.pid}`
const topic = `${prefix}-topic-${run}`
const groupId = `${prefix}-group-${run}`
const base = { bootstrapBrokers: bootstrap, retries: 5, retryDelay: 200, timeout: 15000 }

let step = 'setup'

function log (msg) { console.log(`[${new Date().toISOString()}] ${step}: ${msg}`) }

function fail (where, why, err) {
  console.error(`FAIL at ${where}: ${why}`)
  if (typeof used !== 'undefined' && used.size > 0) console.error(`API versions sent so far: ${usedVersions()}`)
  if (err) console.error(describe(err))
  process.exit(1)
}

// describe renders a client error with what it wraps (MultipleErrors and
// ResponseError carry the broker's answer in errors/response).
function describe (err, depth = 0) {
  const pad = '  '.repeat(depth)
  let out = `${pad}${err?.name ?? 'Error'} ${err?.code ?? ''}: ${err?.message ?? err}`
  if (err?.apiId !== undefined) out += ` (api ${err.apiId})`
  if (err?.response) out += `\n${pad}  response: ${JSON.stringify(err.response, (k, v) => typeof v === 'bigint' ? v.toString() : v)}`
  for (const e of err?.errors ?? []) out += '\n' + describe(e, depth + 1)
  if (err?.cause) out += '\n' + pad + 'cause:\n' + describe(err.cause, depth + 1)
  if (depth === 0 && err?.stack) out += `\n${err.stack}`
  return out
}

function check (cond, why) { if (!cond) throw new Error(why) }

// Which API at which version the client sent, from its own diagnostics
// channel: the proof that the modern versions were the ones spoken.
const used = new Map()
connectionsApiChannel.start.subscribe(ctx => {
  const name = protocolAPIsById[ctx.apiKey] ?? `api${ctx.apiKey}`
  used.set(name, Math.max(used.get(name) ?? -1, ctx.apiVersion))
})
function usedVersions () { return [...used].sort().map(([k, v]) => `${k} v${v}`).join(', ') }

const timer = setTimeout(() => fail(step, `the scenario did not finish within ${timeoutMs} ms`), timeoutMs)

async function main () {
  log(`bootstrap ${bootstrap.join(',')}, topic ${topic}, group ${groupId}, ${records} records`)

  step = 'admin.createTopics'
  const admin = new Admin({ ...base, clientId: `${prefix}-admin` })
  const created = await admin.createTopics({ topics: [topic], partitions, replicas: 1 })
  check(created.length === 1 && created[0].name === topic, `created ${JSON.stringify(created)}, want one topic ${topic}`)
  check(created[0].partitions === partitions, `created with ${created[0].partitions} partitions, want ${partitions}`)
  const topicId = created[0].id
  log(`created ${topic} with ${created[0].partitions} partitions, id ${topicId}`)

  step = 'admin.listTopics'
  const listed = await admin.listTopics()
  check(listed.includes(topic), `${topic} is not among the ${listed.length} listed topics`)
  log(`${listed.length} topics listed, ${topic} among them`)

  step = 'admin.metadata'
  const md = await admin.metadata({ topics: [topic], forceUpdate: true })
  const tmd = md.topics.get(topic)
  check(tmd, `metadata has no ${topic}: ${[...md.topics.keys()]}`)
  check(tmd.partitionsCount === partitions, `metadata says ${tmd.partitionsCount} partitions, want ${partitions}`)
  check(tmd.id === topicId, `metadata's topic id ${tmd.id} is not CreateTopics' ${topicId}`)
  for (const [i, p] of tmd.partitions.entries()) check(md.brokers.has(p.leader), `partition ${i}'s leader ${p.leader} is not among the brokers ${[...md.brokers.keys()]}`)
  log(`cluster ${md.id}, brokers ${[...md.brokers.keys()]}, leaders ${tmd.partitions.map(p => p.leader)}`)

  step = 'producer.send'
  const producer = new Producer({ ...base, clientId: `${prefix}-producer`, idempotent: true, serializers: stringSerializers })
  await produce(producer, 0, records)
  check(producer.producerId !== undefined && producer.producerId >= 0n, `the idempotent producer has no producer id (${producer.producerId})`)
  log(`${records} keyed records sent idempotently (acks all), producer id ${producer.producerId} epoch ${producer.producerEpoch}`)

  step = 'admin.listOffsets'
  let endOffsets = await listEnds(admin)
  check(sum(endOffsets) === BigInt(records), `end offsets ${endOffsets} sum to ${sum(endOffsets)}, want ${records}`)
  check(endOffsets.filter(o => o > 0n).length > 1, `every key landed on one partition (end offsets ${endOffsets}): the keyed partitioner did not spread them`)
  log(`end offsets ${endOffsets}`)

  step = 'consumer.consume'
  const consumer = newConsumer('consumer-1')
  let stream = await consumer.consume({ topics: [topic], mode: MessagesStreamModes.COMMITTED, fallbackMode: MessagesStreamFallbackModes.EARLIEST })
  const keyPartition = new Map()
  let last = await readExactly(stream, 0, records, keyPartition)
  log(`read all ${records} records from the beginning, generation ${consumer.generationId}, member ${consumer.memberId}, assignments ${JSON.stringify(consumer.assignments)}`)

  step = 'consumer.commit'
  await commitAndVerify(consumer, admin, last, endOffsets)

  await describeHeartbeatLeave(admin, consumer, stream, '', 'consumer 1')

  // The same group again, now as a static member (group.instance.id,
  // KIP-345: JoinGroup v5+ with the instance id). A first process joins and
  // is SIGKILLed (no LeaveGroup); a second one with the same instance id,
  // inside the session timeout, must take its place with no rebalance (the
  // same generation and assignment, a new member id) and resume where
  // consumer 1 committed: exactly the records produced since.
  step = 'producer.send (more)'
  const more = Math.max(partitions, Math.floor(records / 10))
  await produce(producer, records, records + more)
  endOffsets = await listEnds(admin)
  check(sum(endOffsets) === BigInt(records + more), `end offsets ${endOffsets} sum to ${sum(endOffsets)}, want ${records + more}`)
  await producer.close()
  log(`${more} more records sent, end offsets ${endOffsets}, producer closed`)

  step = 'static member: first process'
  const instanceId = `${prefix}-instance-${run}`
  const crashed = await joinAndCrash(instanceId)
  log(`pid ${crashed.pid} joined as ${crashed.memberId}, generation ${crashed.generationId}, assignments ${JSON.stringify(crashed.assignments)}, then was SIGKILLed`)

  step = 'static member: restarted'
  const staticConsumer = newConsumer('consumer-2', { groupInstanceId: instanceId })
  stream = await staticConsumer.consume({ topics: [topic], mode: MessagesStreamModes.COMMITTED, fallbackMode: MessagesStreamFallbackModes.FAIL })
  check(staticConsumer.generationId === crashed.generationId, `the restarted static member is in generation ${staticConsumer.generationId}, the crashed one was in ${crashed.generationId}: the group rebalanced`)
  check(staticConsumer.memberId !== crashed.memberId, `the restarted static member kept member id ${crashed.memberId}; Kafka hands out a new one`)
  check(JSON.stringify(staticConsumer.assignments) === JSON.stringify(crashed.assignments), `the restarted static member got ${JSON.stringify(staticConsumer.assignments)}, the crashed one had ${JSON.stringify(crashed.assignments)}`)
  log(`rejoined as ${staticConsumer.memberId} in generation ${staticConsumer.generationId} with the same assignment: no rebalance`)
  last = await readExactly(stream, records, records + more, keyPartition)
  log(`resumed at the committed offsets and read exactly the ${more} new records`)

  step = 'static consumer.commit'
  await commitAndVerify(staticConsumer, admin, last, endOffsets)

  await describeHeartbeatLeave(admin, staticConsumer, stream, instanceId, 'static consumer')

  step = 'admin.deleteTopics'
  await admin.deleteTopics({ topics: [topic] })
  const after = await admin.listTopics()
  check(!after.includes(topic), `${topic} is still listed after DeleteTopics`)
  log(`${topic} deleted`)
  await admin.close()
}

// describeHeartbeatLeave checks that the group is STABLE with consumer as
// its one member (with instanceId, when given, as its group.instance.id),
// heartbeats, and leaves: the steps both the dynamic and the static member
// end with.
async function describeHeartbeatLeave (admin, consumer, stream, instanceId, name) {
  const tag = instanceId ? 'static ' : ''
  step = `${tag}admin.describeGroups`
  const described = (await admin.describeGroups({ groups: [groupId] })).get(groupId)
  if (instanceId) {
    const member = described?.members.get(consumer.memberId)
    check(described?.state === 'STABLE' && described.members.size === 1 && member, `group ${groupId}: ${described?.state} with members ${[...(described?.members.keys() ?? [])]}, want STABLE with ${consumer.memberId}`)
    check(member.groupInstanceId === instanceId, `member ${member.id} has instance id ${member.groupInstanceId}, want ${instanceId}`)
    log(`group ${groupId} is ${described.state}, its member has instance id ${member.groupInstanceId}`)
  } else {
    check(described && described.state === 'STABLE' && described.members.size === 1, `group ${groupId}: ${described?.state} with ${described?.members.size} members, want STABLE with 1`)
    log(`group ${groupId} is ${described.state}, protocol ${described.protocol}, 1 member`)
  }

  step = `${tag}consumer heartbeat`
  await heartbeat(consumer)
  log('a heartbeat answered')

  step = `${tag}consumer.close`
  await stream.close()
  await consumer.close()
  log(`${name} left the group`)
}

function sum (xs) { return xs.reduce((a, b) => a + b, 0n) }

function newConsumer (name, extra = {}) {
  const c = new Consumer({ ...base, clientId: `${prefix}-${name}`, groupId, deserializers: stringDeserializers, autocommit: false, maxWaitTime: 500, sessionTimeout: 10000, heartbeatInterval: 500, ...extra })
  return c
}

// produce sends keys from..to-1 in batches, each acknowledged by all.
async function produce (producer, from, to) {
  const batch = 50
  for (let b = from; b < to; b += batch) {
    const messages = []
    for (let i = b; i < Math.min(b + batch, to); i++) {
      messages.push({ topic, key: `key-${i}`, value: `value-${i}`, headers: { seq: String(i) } })
    }
    const res = await producer.send({ messages, acks: ProduceAcks.ALL })
    for (const o of res.offsets ?? []) check(o.topic === topic && o.partition >= 0 && o.partition < partitions, `send answered ${JSON.stringify(o, (k, v) => typeof v === 'bigint' ? v.toString() : v)}`)
  }
}

// listEnds is every partition's end offset (ListOffsets LATEST).
async function listEnds (admin) {
  const ends = await admin.listOffsets({ topics: [{ name: topic, partitions: [0, 1, 2].map(p => ({ partitionIndex: p, timestamp: -1n })) }] })
  const out = new Array(partitions).fill(0n)
  for (const p of ends[0]?.partitions ?? []) out[p.partitionIndex] = p.offset
  return out
}

// readExactly reads keys from..to-1 from stream, each once, in offset order
// per partition, a key always on the partition it was first seen on; any
// other key fails. It returns the last message read on each partition.
async function readExactly (stream, from, to, keyPartition) {
  const seen = new Set()
  const last = new Map()
  const want = to - from
  for await (const message of stream) {
    check(message.topic === topic, `a message of topic ${message.topic}`)
    const i = Number(message.key.slice('key-'.length))
    check(message.key === `key-${i}` && message.value === `value-${i}`, `key ${message.key} carries value ${message.value}`)
    check(message.headers.get('seq') === String(i), `key ${message.key} carries header seq=${message.headers.get('seq')}`)
    check(i >= from && i < to, `key ${message.key} read (partition ${message.partition} offset ${message.offset}), want only keys ${from}..${to - 1}`)
    check(!seen.has(i), `key ${message.key} read twice (partition ${message.partition} offset ${message.offset})`)
    const prev = last.get(message.partition)
    check(!prev || message.offset > prev.offset, `partition ${message.partition}: offset ${message.offset} after ${prev?.offset}`)
    seen.add(i)
    keyPartition.set(message.key, message.partition)
    last.set(message.partition, message)
    if (seen.size === want) break
  }
  check(seen.size === want, `the stream ended after ${seen.size} of ${want} records`)
  return last
}

// commitAndVerify commits the next offset after each partition's last
// message (the message's own commit()), requires that to be the partition's
// end, and reads it back through the Consumer (OffsetFetch) and the Admin.
async function commitAndVerify (consumer, admin, last, endOffsets) {
  for (const m of last.values()) await m.commit()
  const want = [...endOffsets]
  for (const [p, m] of last) check(m.offset + 1n === endOffsets[p], `partition ${p}: read up to ${m.offset + 1n}, end offset ${endOffsets[p]}`)
  log(`committed ${want}`)

  const committed = await consumer.listCommittedOffsets({ topics: [{ topic, partitions: [0, 1, 2] }] })
  const got = committed.get(topic)
  check(got && got.length === partitions, `committed offsets ${got}`)
  for (let p = 0; p < partitions; p++) check(got[p] === want[p], `partition ${p}: committed offset read back ${got[p]}, want ${want[p]}`)
  log(`consumer reads back ${got}`)

  const groups = await admin.listConsumerGroupOffsets({ groups: [groupId] })
  const gt = groups[0]?.topics.find(t => t.name === topic)
  check(groups[0]?.groupId === groupId && gt, `group offsets ${JSON.stringify(groups, (k, v) => typeof v === 'bigint' ? v.toString() : v)}`)
  check(gt.partitions.length === partitions, `admin reads ${gt.partitions.length} committed partitions, want ${partitions}`)
  for (const p of gt.partitions) check(p.committedOffset === want[p.partitionIndex], `partition ${p.partitionIndex}: admin reads committed ${p.committedOffset}, want ${want[p.partitionIndex]}`)
  log('admin reads the same committed offsets')
}

// joinAndCrash runs a static member in a child process, waits for it to
// join the group (it reads nothing and commits nothing), SIGKILLs it and
// returns what it reported of its membership.
async function joinAndCrash (instanceId) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    import { Consumer } from '@platformatic/kafka'
    const c = new Consumer(JSON.parse(process.env.SCENARIO_CHILD_OPTIONS))
    c.once('consumer:group:join', p => console.log(JSON.stringify({ pid: process.pid, memberId: p.memberId, generationId: p.generationId, assignments: p.assignments })))
    await c.consume({ topics: [process.env.SCENARIO_CHILD_TOPIC], mode: 'committed', fallbackMode: 'fail' })
    setInterval(() => {}, 1000)
  `], {
    cwd: import.meta.dirname,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      SCENARIO_CHILD_TOPIC: topic,
      SCENARIO_CHILD_OPTIONS: JSON.stringify({ ...base, clientId: `${prefix}-consumer-crashing`, groupId, groupInstanceId: instanceId, autocommit: false, maxWaitTime: 500, sessionTimeout: 10000, heartbeatInterval: 500 })
    }
  })
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  let out = ''
  const joined = await new Promise((resolve, reject) => {
    child.stdout.on('data', d => {
      out += d
      const nl = out.indexOf('\n')
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)))
    })
    exited.then(e => reject(new Error(`the static member's process exited (${e.code ?? e.signal}) before it joined: ${out}`)))
  })
  child.kill('SIGKILL')
  const e = await exited
  check(e.signal === 'SIGKILL', `the static member's process ended ${e.code ?? e.signal}, want SIGKILL`)
  return joined
}

// heartbeat resolves on the member's next answered Heartbeat (v4).
function heartbeat (consumer) {
  return new Promise((resolve, reject) => {
    consumer.once('consumer:heartbeat:end', resolve)
    consumer.once('consumer:heartbeat:error', p => reject(p.error))
  })
}

main().then(() => {
  clearTimeout(timer)
  step = 'done'
  log(`API versions sent: ${usedVersions()}`)
  log('OK')
  process.exit(0)
}, err => fail(step, err?.message ?? String(err), err))
