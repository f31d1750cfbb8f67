//! The Redis double as a host of turmoil's simulated world, unchanged: served over the simulator's listener, its keys
//! expiring on simulated time, pub/sub crossing the simulated network, and a partition cutting a subscriber off.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::TokioClock;
use mcpstorm_fake::{RedisConfig, RedisDouble};
use mcpstorm_sim::world::TurmoilListener;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::TcpStream;

const PORT: u16 = 6379;

fn sim_with_redis<'a>() -> turmoil::Sim<'a> {
    // A 1 ms network, fixed, so that simulated round trips cost a known time.
    let mut sim = turmoil::Builder::new()
        .rng_seed(3)
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(60))
        .build();
    sim.host("redis", || async {
        // Built inside the host: a restarted host is a restarted Redis without persistence, empty.
        let double = RedisDouble::with_clock(RedisConfig::default(), Arc::new(TokioClock::new(0)));
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
        double.serve(TurmoilListener(listener)).await;
        Ok(())
    });
    sim
}

/// Sends `send` and reads exactly as many bytes as `want` has.
async fn expect(conn: &mut TcpStream, send: &[u8], want: &[u8]) -> turmoil::Result {
    conn.write_all(send).await?;
    let mut got = vec![0; want.len()];
    conn.read_exact(&mut got).await?;
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    Ok(())
}

#[test]
fn keys_expire_on_simulated_time() {
    let mut sim = sim_with_redis();
    sim.client("gateway", async {
        let mut conn = TcpStream::connect(("redis", PORT)).await?;
        expect(&mut conn, b"SET k v PX 1000\r\n", b"+OK\r\n").await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The round trips took simulated time too (a few ms): the key is alive, with a little under 500 ms left.
        conn.write_all(b"GET k\r\nPTTL k\r\n").await?;
        let mut got = [0u8; 7 + 6];
        conn.read_exact(&mut got).await?;
        let text = String::from_utf8_lossy(&got).into_owned();
        assert!(text.starts_with("$1\r\nv\r\n:4"), "{text:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        expect(&mut conn, b"GET k\r\n", b"$-1\r\n").await
    });
    sim.run().expect("simulation");
}

#[test]
fn messages_cross_the_simulated_network_until_a_partition_cuts_them() {
    let mut sim = sim_with_redis();
    sim.client("subscriber", async {
        let mut conn = TcpStream::connect(("redis", PORT)).await?;
        expect(&mut conn, b"SUBSCRIBE breakers\r\n", b"*3\r\n$9\r\nsubscribe\r\n$8\r\nbreakers\r\n:1\r\n").await?;
        let mut message = vec![0u8; b"*3\r\n$7\r\nmessage\r\n$8\r\nbreakers\r\n$4\r\nopen\r\n".len()];
        conn.read_exact(&mut message).await?;
        assert!(message.ends_with(b"$4\r\nopen\r\n"));
        // The partition holds the next message back: nothing arrives while it lasts.
        let mut byte = [0u8; 1];
        let cut = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut byte)).await;
        assert!(cut.is_err(), "a message crossed the partition");
        Ok(())
    });
    sim.client("publisher", async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut conn = TcpStream::connect(("redis", PORT)).await?;
        expect(&mut conn, b"PUBLISH breakers open\r\n", b":1\r\n").await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        turmoil::partition("redis", "subscriber");
        // Redis still counts the subscriber: it cannot know the link is cut.
        expect(&mut conn, b"PUBLISH breakers closed\r\n", b":1\r\n").await
    });
    sim.run().expect("simulation");
}
