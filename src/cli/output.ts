/** One line to the command's stdout (its report) or stderr (warnings), as every `gym` command writes them. */
export const stdoutLine = (line: string): void => void process.stdout.write(`${line}\n`);
export const stderrLine = (line: string): void => void process.stderr.write(`${line}\n`);
