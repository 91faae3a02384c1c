// Validates tsumd's OpenAPI document against the OpenAPI 3 schema with swagger-parser, and checks that the
// validator catches a broken copy (an operation without responses), so a pass means something.
//   node validate.mjs ../../api/openapi.json
import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';

const file = process.argv[2];
if (!file) {
  console.error('usage: node validate.mjs OPENAPI.json');
  process.exit(2);
}
const doc = JSON.parse(readFileSync(file, 'utf8'));

try {
  const api = await SwaggerParser.validate(structuredClone(doc));
  const ops = Object.values(api.paths).flatMap((item) => Object.keys(item).filter((k) => k !== 'parameters'));
  console.log(`valid OpenAPI ${api.openapi}: ${Object.keys(api.paths).length} paths, ${ops.length} operations`);
} catch (err) {
  console.error(`${file} is not a valid OpenAPI document: ${err.message}`);
  process.exit(1);
}

const broken = structuredClone(doc);
delete broken.paths['/v1/runs/{id}'].get.responses;
try {
  await SwaggerParser.validate(broken);
  console.error('the validator accepted an operation without responses');
  process.exit(1);
} catch (err) {
  console.log(`a broken copy is refused, as it should be: ${err.message.split('\n')[0]}`);
}
