// Readers of the deployment files exactly as their consumers read them: the DaemonSet as
// the kubelet builds a container's command line (image ENTRYPOINT/CMD, $(VAR) expansion),
// the Dockerfile's stages and instructions, and a systemd unit's settings.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

// ---- Kubernetes --------------------------------------------------------------------------

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

export interface HttpProbe {
  httpGet: { path: string; port: number | string };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  securityContext?: {
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  startupProbe?: HttpProbe;
  readinessProbe?: HttpProbe;
  livenessProbe?: HttpProbe;
  volumeMounts?: {
    name: string;
    mountPath: string;
    readOnly?: boolean;
    mountPropagation?: string;
  }[];
}

export interface Volume {
  name: string;
  hostPath?: { path: string };
  configMap?: { name: string };
}

export interface DaemonSetFile {
  configMaps: Map<string, Record<string, string>>;
  podSpec: {
    hostNetwork?: boolean;
    securityContext?: { seccompProfile?: { type: string } };
    initContainers?: Container[];
    containers: Container[];
    volumes: Volume[];
  };
  podAnnotations: Record<string, string>;
}

export function readDaemonSet(path = 'deploy/kubernetes/daemonset.yaml'): DaemonSetFile {
  const docs = parseAllDocuments(readFileSync(path, 'utf8')).map(
    (d) => d.toJS() as { kind: string; metadata: { name: string }; [k: string]: unknown },
  );
  const configMaps = new Map<string, Record<string, string>>();
  for (const d of docs.filter((d) => d.kind === 'ConfigMap')) {
    configMaps.set(d.metadata.name, d.data as Record<string, string>);
  }
  const ds = docs.find((d) => d.kind === 'DaemonSet') as unknown as {
    spec: {
      template: {
        metadata: { annotations?: Record<string, string> };
        spec: DaemonSetFile['podSpec'];
      };
    };
  };
  return {
    configMaps,
    podSpec: ds.spec.template.spec,
    podAnnotations: ds.spec.template.metadata.annotations ?? {},
  };
}

/**
 * The argv the kubelet runs: `command` or else the image's ENTRYPOINT; `args` or else, only
 * when `command` is absent, the image's CMD; then $(VAR) references expanded from `env`
 * ($$ escapes, unknown references stay as written), as Kubernetes does.
 */
export function containerArgv(
  c: Container,
  image: { entrypoint: string[]; cmd: string[] },
  env: Record<string, string>,
): string[] {
  const argv = [
    ...(c.command ?? image.entrypoint),
    ...(c.args ?? (c.command !== undefined ? [] : image.cmd)),
  ];
  return argv.map((a) =>
    a.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string | undefined) =>
      m === '$$' ? '$' : (env[name as string] ?? m),
    ),
  );
}

/** The container's environment with downward-API fields taken from `fields`. */
export function containerEnv(c: Container, fields: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    const f = e.valueFrom?.fieldRef?.fieldPath;
    if (f !== undefined) {
      const v = fields[f];
      if (v === undefined) throw new Error(`env ${e.name}: no lab value for ${f}`);
      env[e.name] = v;
    }
  }
  return env;
}

// ---- Dockerfile ---------------------------------------------------------------------------

export interface Instruction {
  op: string;
  /** The text after the instruction word, continuation lines joined. */
  text: string;
  /** JSON (exec) form when the text is a JSON array. */
  json?: string[];
}

export interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

export function readDockerfile(path = 'Dockerfile'): Stage[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const joined: string[] = [];
  let cur = '';
  for (const line of lines) {
    if (cur === '' && /^\s*(#|$)/.test(line)) continue;
    if (/^\s*#/.test(line)) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) cur += line.slice(0, -1) + ' ';
    else {
      joined.push(cur + line);
      cur = '';
    }
  }
  const stages: Stage[] = [];
  for (const l of joined) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(l);
    if (!m) continue;
    const op = (m[1] as string).toUpperCase();
    const text = (m[2] as string).trim();
    if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(text);
      stages.push({ from: f?.[1] ?? text, ...(f?.[2] ? { name: f[2] } : {}), instructions: [] });
      continue;
    }
    let json: string[] | undefined;
    if (text.startsWith('[')) {
      try {
        json = JSON.parse(text) as string[];
      } catch {
        /* shell form */
      }
    }
    stages.at(-1)?.instructions.push({ op, text, ...(json ? { json } : {}) });
  }
  return stages;
}

/** The image's ENTRYPOINT and CMD (exec form; the shell form would run under /bin/sh -c). */
export function imageCommand(stage: Stage): { entrypoint: string[]; cmd: string[] } {
  const last = (op: string) => stage.instructions.filter((i) => i.op === op).at(-1);
  const form = (i: Instruction | undefined) =>
    i === undefined ? [] : (i.json ?? ['/bin/sh', '-c', i.text]);
  return { entrypoint: form(last('ENTRYPOINT')), cmd: form(last('CMD')) };
}

// ---- systemd ------------------------------------------------------------------------------

/** Settings by name (a key given several times keeps every value, in order). */
export type Unit = Map<string, string[]>;

export function readUnit(path = 'deploy/systemd/fibkeeper.service'): Unit {
  const unit: Unit = new Map();
  let cur = '';
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    if (cur === '' && /^\s*([#;]|\[|$)/.test(raw)) continue;
    if (raw.endsWith('\\')) {
      cur += raw.slice(0, -1) + ' ';
      continue;
    }
    const line = cur + raw;
    cur = '';
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq).trim();
    const list = unit.get(key) ?? [];
    list.push(line.slice(eq + 1).trim());
    unit.set(key, list);
  }
  return unit;
}

/** Space-separated words of every value of `key` ("" resets the list, as in systemd). */
export function unitList(unit: Unit, key: string): string[] {
  let out: string[] = [];
  for (const v of unit.get(key) ?? []) {
    if (v === '') out = [];
    else out.push(...v.split(/\s+/));
  }
  return out;
}

/** An Exec*= line split into argv (double quotes group words; the prefixes -@:+! are returned). */
export function execLine(value: string): { prefix: string; argv: string[] } {
  const m = /^([-@:+!]*)(.*)$/.exec(value) as RegExpExecArray;
  const argv = [...(m[2] as string).matchAll(/"([^"]*)"|(\S+)/g)].map(
    (w) => (w[1] ?? w[2]) as string,
  );
  return { prefix: m[1] as string, argv };
}
