// Run by TestA2AJSInterop with testdata/a2a-js-1 as its working directory
// (where @a2a-js/sdk 1.3.0 and its jose are installed). Reads {signed,
// card, kid, x, d} on stdin: verifies `signed` (a card cardsig signed)
// with the SDK's verifyAgentCardSignature, and signs `card` with the SDK's
// generateAgentCardSignature under the same Ed25519 key (JWK x, d) and kid.
import * as jose from 'jose';
import { generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { signed, card, kid, x, d } = JSON.parse(input);
const pub = await jose.importJWK({ kty: 'OKP', crv: 'Ed25519', x }, 'EdDSA');
const priv = await jose.importJWK({ kty: 'OKP', crv: 'Ed25519', x, d }, 'EdDSA');
const out = {};
console.debug = () => {}; // the SDK logs each failed entry there
try {
  await verifyAgentCardSignature(async () => pub)(signed);
  out.verified = true;
} catch (e) {
  out.verified = false;
  out.error = String(e && e.message);
}
out.signedByJS = await generateAgentCardSignature(priv, { alg: 'EdDSA', typ: 'JOSE', kid })(card);
process.stdout.write(JSON.stringify(out));
