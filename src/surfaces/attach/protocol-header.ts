/** The response header naming the attach protocol version the daemon speaks (every answer). */
export const PROTOCOL_HEADER = "x-attach-protocol-version";
