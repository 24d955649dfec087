// The kafkajs clients of the capture lab (run by record.py with NODE_PATH set).
//   node kjs.js admin|group|sasl|mixed
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');
const host = process.env.KWIRE_LAB_HOST || '127.0.0.1';
const port = process.env.KWIRE_LAB_PORT || '9092';
const broker = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;

// KWIRE_LAB_TLS=1: TLS to the lab's terminator (self-signed certificate, not checked);
// run node with --tls-keylog=FILE for the key log.
const tls = process.env.KWIRE_LAB_TLS ? { ssl: { rejectUnauthorized: false } } : {};

function kafka(extra = {}) {
  return new Kafka({ clientId: 'kwire-lab-kjs', brokers: [broker], logLevel: logLevel.WARN, ...tls,
    connectionTimeout: 5000, requestTimeout: 10000, retry: { retries: 2 }, ...extra });
}
async function step(name, fn) {
  const t = Date.now();
  try {
    const r = await fn();
    console.log(`ok   ${name} (${Date.now() - t} ms): ${JSON.stringify(r)}`.slice(0, 400));
    return r;
  } catch (e) {
    console.log(`FAIL ${name} (${Date.now() - t} ms): ${e.name}: ${e.message}`.slice(0, 400));
    return undefined;
  }
}

async function admin() {
  const a = kafka().admin();
  await step('connect', () => a.connect());
  await step('createTopics', () => a.createTopics({ topics: [{ topic: 'lab-kjs-admin',
    numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] }));
  await step('fetchTopicMetadata', () => a.fetchTopicMetadata({ topics: ['lab-kjs-admin'] }));
  await step('describeConfigs', () => a.describeConfigs({ includeSynonyms: false,
    resources: [{ type: 2, name: 'lab-kjs-admin' }] }));
  await step('alterConfigs', () => a.alterConfigs({ validateOnly: false,
    resources: [{ type: 2, name: 'lab-kjs-admin',
      configEntries: [{ name: 'retention.ms', value: '7200000' }] }] }));
  await step('fetchTopicOffsets', () => a.fetchTopicOffsets('lab-kjs-admin'));
  await step('listGroups', () => a.listGroups());
  await step('describeGroups', () => a.describeGroups(['kwire-lab-none']));
  await step('describeCluster', () => a.describeCluster());
  await step('createAcls', () => a.createAcls({ acl: [{ resourceType: 2,
    resourceName: 'lab-kjs-admin', resourcePatternType: 3, principal: 'User:carol',
    host: '*', operation: 3, permissionType: 3 }] }));
  await step('describeAcls', () => a.describeAcls({ resourceType: 1,
    resourcePatternType: 1, operation: 1, permissionType: 1 }));
  await step('deleteTopics', () => a.deleteTopics({ topics: ['lab-kjs-admin'], timeout: 5000 }));
  await step('disconnect', () => a.disconnect());
}

async function group(topic = 'lab-kjs', n = 6, size = 0) {
  const k = kafka();
  const p = k.producer({ allowAutoTopicCreation: true });
  await step('producer connect', () => p.connect());
  const big = size ? 'k'.repeat(size) : '';
  await step('send', () => p.send({ topic, compression: CompressionTypes.GZIP,
    messages: Array.from({ length: n }, (_, i) => ({ key: `kjs-${i}`,
      value: i === n - 1 ? null : `kafkajs ${i} ${big}`, partition: 0,
      headers: { origin: 'kjs', n: String(i) } })) }));
  await step('producer disconnect', () => p.disconnect());
  const c = k.consumer({ groupId: 'kwire-lab-kjs', sessionTimeout: 6000,
    heartbeatInterval: 1000, maxWaitTimeInMs: 200 });
  await step('consumer connect', () => c.connect());
  await step('subscribe', () => c.subscribe({ topic, fromBeginning: true }));
  let got = 0;
  await step('run', () => new Promise((resolve) => {
    const timer = setTimeout(resolve, 20000);
    c.run({ eachMessage: async () => { got += 1; if (got >= n) { clearTimeout(timer); setTimeout(resolve, 1500); } } });
  }));
  console.log('consumed', got);
  await step('consumer disconnect', () => c.disconnect());
}

async function sasl() {
  const a = kafka({ sasl: { mechanism: 'plain', username: 'alice', password: 'alice-secret' },
    retry: { retries: 1 } }).admin();
  await step('connect', () => a.connect());
  await step('listTopics', () => a.listTopics());
  await step('disconnect', () => a.disconnect());
}

const cmd = process.argv[2];
const run = { admin, group, sasl, mixed: () => group('lab-kjs-mixed', 20, 3000) }[cmd];
const hard = setTimeout(() => { console.log('hard timeout'); process.exit(2); }, 80000);
run().then(() => { clearTimeout(hard); process.exit(0); },
  (e) => { console.log('error', e); process.exit(1); });
