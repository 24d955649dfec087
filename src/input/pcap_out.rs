//! Writing captures: a classic pcap writer and TCP conversations over Ethernet/IPv4,
//! built with etherparse's `PacketBuilder`. Used to make the bundled demo capture and
//! test and benchmark captures from frames kwire encodes itself.
//!
//! Source: the pcap file format (LINKTYPE_ETHERNET = 1, microsecond timestamps,
//! magic `0xa1b2c3d4` written little-endian), RFC 9293 for sequence numbers.

use etherparse::PacketBuilder;
use std::io::{self, Write};
use std::net::SocketAddrV4;

/// Largest TCP payload per segment (an Ethernet MTU of 1500 less 40 bytes of headers).
pub const MSS: usize = 1460;

/// A classic pcap writer (Ethernet link type, microsecond timestamps).
pub struct PcapWriter<W: Write> {
    w: W,
    /// Packets written so far.
    pub packets: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn new(mut w: W) -> io::Result<PcapWriter<W>> {
        w.write_all(&0xa1b2_c3d4u32.to_le_bytes())?;
        w.write_all(&2u16.to_le_bytes())?;
        w.write_all(&4u16.to_le_bytes())?;
        w.write_all(&0i32.to_le_bytes())?;
        w.write_all(&0u32.to_le_bytes())?;
        w.write_all(&262_144u32.to_le_bytes())?;
        w.write_all(&1u32.to_le_bytes())?;
        Ok(PcapWriter { w, packets: 0 })
    }

    /// Writes one packet record at `micros` microseconds since the Unix epoch.
    ///
    /// # Errors
    /// The writer's errors; a packet over 4 GiB.
    pub fn packet(&mut self, micros: u64, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet over 4 GiB"))?;
        self.w
            .write_all(&((micros / 1_000_000) as u32).to_le_bytes())?;
        self.w
            .write_all(&((micros % 1_000_000) as u32).to_le_bytes())?;
        self.w.write_all(&len.to_le_bytes())?;
        self.w.write_all(&len.to_le_bytes())?;
        self.w.write_all(data)?;
        self.packets += 1;
        Ok(())
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// One TCP connection between a client and a server, with its sequence numbers.
pub struct TcpFlow {
    client: SocketAddrV4,
    server: SocketAddrV4,
    seq: [u32; 2],
}

impl TcpFlow {
    /// A connection whose initial sequence numbers are `isn` (client, server).
    pub fn new(client: SocketAddrV4, server: SocketAddrV4, isn: [u32; 2]) -> TcpFlow {
        TcpFlow {
            client,
            server,
            seq: isn,
        }
    }

    fn build(&self, to_server: bool, flags: (bool, bool, bool), payload: &[u8]) -> Vec<u8> {
        let (src, dst) = if to_server {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let (s, d) = if to_server { (0, 1) } else { (1, 0) };
        let mac = |a: &SocketAddrV4| {
            let o = a.ip().octets();
            [0x02, 0x00, o[0], o[1], o[2], o[3]]
        };
        let b = PacketBuilder::ethernet2(mac(&src), mac(&dst)).ipv4(
            src.ip().octets(),
            dst.ip().octets(),
            64,
        );
        let mut t = b.tcp(src.port(), dst.port(), self.seq[s], 65535);
        let (syn, ack, fin) = flags;
        if syn {
            t = t.syn();
        }
        if ack {
            t = t.ack(self.seq[d]);
        }
        if fin {
            t = t.fin();
        }
        if !syn && !fin && !payload.is_empty() {
            t = t.psh();
        }
        let mut out = Vec::with_capacity(54 + payload.len());
        // Building into a Vec cannot fail for payloads under the IPv4 limit (MSS-sized here).
        let _ = t.write(&mut out, payload);
        out
    }

    /// The three-way handshake (SYN, SYN-ACK, ACK) at `micros`.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn open<W: Write>(&mut self, w: &mut PcapWriter<W>, micros: u64) -> io::Result<()> {
        let p = self.build(true, (true, false, false), &[]);
        w.packet(micros, &p)?;
        self.seq[0] = self.seq[0].wrapping_add(1);
        let p = self.build(false, (true, true, false), &[]);
        w.packet(micros + 50, &p)?;
        self.seq[1] = self.seq[1].wrapping_add(1);
        let p = self.build(true, (false, true, false), &[]);
        w.packet(micros + 100, &p)
    }

    /// Sends `data` from the client (`to_server`) or the server, in MSS-sized segments
    /// 10 µs apart starting at `micros`.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn send<W: Write>(
        &mut self,
        w: &mut PcapWriter<W>,
        to_server: bool,
        micros: u64,
        data: &[u8],
    ) -> io::Result<()> {
        let s = if to_server { 0 } else { 1 };
        for (i, chunk) in data.chunks(MSS).enumerate() {
            let p = self.build(to_server, (false, true, false), chunk);
            w.packet(micros + 10 * i as u64, &p)?;
            self.seq[s] = self.seq[s].wrapping_add(chunk.len() as u32);
        }
        Ok(())
    }

    /// Sends `data` as [`TcpFlow::send`] does, as a capture that lost the segments
    /// overlapping `lost` (byte offsets into `data`) records it: those segments are not
    /// written, but the sequence numbers move on as if they had been (the receiver got
    /// them; only the capture missed them). With `acks`, the receiver acknowledges every
    /// second segment with a bare ACK, as a TCP stack with delayed ACKs does (RFC 9293
    /// 3.8.6.3): its ACKs cover the lost bytes too.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn send_losing<W: Write>(
        &mut self,
        w: &mut PcapWriter<W>,
        to_server: bool,
        micros: u64,
        data: &[u8],
        lost: std::ops::Range<usize>,
        acks: bool,
    ) -> io::Result<()> {
        let s = if to_server { 0 } else { 1 };
        for (i, chunk) in data.chunks(MSS).enumerate() {
            let (a, b) = (i * MSS, i * MSS + chunk.len());
            let t = micros + 10 * i as u64;
            if b <= lost.start || a >= lost.end {
                let p = self.build(to_server, (false, true, false), chunk);
                w.packet(t, &p)?;
            }
            self.seq[s] = self.seq[s].wrapping_add(chunk.len() as u32);
            if acks && i % 2 == 1 {
                let p = self.build(!to_server, (false, true, false), &[]);
                w.packet(t + 5, &p)?;
            }
        }
        Ok(())
    }

    /// A bare ACK from the client (`from_client`) or the server at `micros`,
    /// acknowledging everything the other side sent.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn ack<W: Write>(
        &mut self,
        w: &mut PcapWriter<W>,
        from_client: bool,
        micros: u64,
    ) -> io::Result<()> {
        let p = self.build(from_client, (false, true, false), &[]);
        w.packet(micros, &p)
    }

    /// Closes the connection (FIN from the client, FIN from the server) at `micros`.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn close<W: Write>(&mut self, w: &mut PcapWriter<W>, micros: u64) -> io::Result<()> {
        let p = self.build(true, (false, true, true), &[]);
        w.packet(micros, &p)?;
        self.seq[0] = self.seq[0].wrapping_add(1);
        let p = self.build(false, (false, true, true), &[]);
        w.packet(micros + 50, &p)?;
        self.seq[1] = self.seq[1].wrapping_add(1);
        Ok(())
    }

    /// Resets the connection: an RST from the client (`from_client`) or the server at
    /// `micros`.
    ///
    /// # Errors
    /// The writer's errors.
    pub fn reset<W: Write>(
        &mut self,
        w: &mut PcapWriter<W>,
        from_client: bool,
        micros: u64,
    ) -> io::Result<()> {
        let p = self.build_rst(from_client);
        w.packet(micros, &p)
    }

    fn build_rst(&self, to_server: bool) -> Vec<u8> {
        let (src, dst) = if to_server {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let s = if to_server { 0 } else { 1 };
        let mac = |a: &SocketAddrV4| {
            let o = a.ip().octets();
            [0x02, 0x00, o[0], o[1], o[2], o[3]]
        };
        let t = PacketBuilder::ethernet2(mac(&src), mac(&dst))
            .ipv4(src.ip().octets(), dst.ip().octets(), 64)
            .tcp(src.port(), dst.port(), self.seq[s], 0)
            .rst();
        let mut out = Vec::with_capacity(54);
        let _ = t.write(&mut out, &[]);
        out
    }
}
