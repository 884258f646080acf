package io.sparkreplicate.catalyst

import org.apache.spark.sql.catalyst.expressions.SpecificInternalRow
import org.apache.spark.sql.types.{DataType, StringType}

/**
 * Copies slots of one reader row into slots of another, the pairs (source, target, type) chosen
 * once per schema. A string slot takes the other's location ([[StringSlot.assign]]), not its view,
 * which the next message moves; any other value is copied as the row holds it.
 */
private[catalyst] final class SlotCopy(from: SpecificInternalRow, to: SpecificInternalRow,
    pairs: Seq[(Int, Int, DataType)]) {
  private val (strings, others) = pairs.partition(_._3 == StringType)
  private val stringSources = strings.map(p => StringSlot.of(from, p._1)).toArray
  private val stringTargets = strings.map(p => StringSlot.of(to, p._2)).toArray
  private val sources = others.map(_._1).toArray
  private val targets = others.map(_._2).toArray
  private val types = others.map(_._3).toArray

  def apply(): Unit = {
    var i = 0
    while (i < stringTargets.length) { stringTargets(i).assign(stringSources(i)); i += 1 }
    i = 0
    while (i < targets.length) {
      if (from.isNullAt(sources(i))) to.setNullAt(targets(i)) else to.update(targets(i), from.get(sources(i), types(i)))
      i += 1
    }
  }
}
