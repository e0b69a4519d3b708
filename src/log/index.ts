// Structured JSON logging (pino), one event per line. Every component takes a `Logger` in
// its params; tests pass `silentLogger()`.
import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';

export type Logger = PinoLogger;
export type LogLevel = LevelWithSilent;
export const LOG_LEVELS: readonly LogLevel[] = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
];

/** A logger that writes JSON lines to `dest` (stderr by default). */
export function createLogger(
  level: LogLevel = 'info',
  dest: NodeJS.WritableStream = process.stderr,
): Logger {
  return pino({ level, base: { name: 'fibkeeper' } }, dest);
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
